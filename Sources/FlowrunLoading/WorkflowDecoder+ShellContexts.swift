import FlowrunModel

extension WorkflowDecoder {
    /// Refuses a `${{ }}` that lands where the shell evaluates text as code
    /// (bash arithmetic: `$(( ))`, `(( ))`, `let`, `[[ -eq ]]`, subscripts):
    /// no quoting keeps a value from running there (SPEC §11). Everywhere
    /// else the renderer quotes the value for its context.
    mutating func checkShellContexts(_ script: Template) {
        let segments = script.segments
        let expressions = segments.compactMap { segment -> (Expression, SourceLocation)? in
            if case .expression(let expression, let location) = segment { return (expression, location) }
            return nil
        }
        guard !expressions.isEmpty else { return }
        // A call's text comes from its template; only the values differ. The
        // texts are compared too (cheap: calls share the template's strings),
        // so a call whose text differs is scanned on its own.
        let key = ShellContextKey(location: script.location, shape: segments.map { if case .text = $0 { true } else { false } })
        let texts = segments.compactMap { segment -> String? in
            if case .text(let text) = segment { return text }
            return nil
        }
        let points: [ShellInsertionPoint]
        if let known = shellContexts[key], known.texts == texts {
            points = known.points
        } else {
            points = ShellContextScanner.insertionPoints(in: segments)
            shellContexts[key] = (texts, points)
        }
        for ((expression, location), point) in zip(expressions, points) {
            switch point.insertion {
            case .evaluated(let construct):
                let name = Self.variableName(for: expression)
                error(
                    "${{ \(expression) }} is inside \(construct), where bash evaluates the text as code, so a value could run commands; "
                        + "pass it through env: (env: {\(name): \"${{ \(expression) }}\"}) and write $\(name) there", at: location)
            case _ where Template.isWholeArguments(.expression(expression, location)) && (point.insertion != .word || point.backticks > 0):
                // The planner fills it in as several single-quoted words: only a
                // plain word keeps them words (in quotes or a heredoc they would
                // be text the shell reads again).
                error("${{ args }} is the words after -- as separate shell words: write it as a plain word (not inside quotes, a heredoc, backticks or ${…})", at: location)
            case .unsupported(let reason):
                error("${{ \(expression) }} is inside \(reason), where flowrun cannot quote it; pass it through env: and use the variable", at: location)
            default:
                break
            }
        }
    }

    /// Another interpreter (`shell: python3`, `#!/usr/bin/env node`) gets
    /// each value as one single-quoted shell word: a quote written around
    /// `${{` there ends up in the text.
    mutating func warnOfQuotedValues(_ script: Template) {
        var before: String?
        for segment in script.segments {
            switch segment {
            case .text(let text): before = text
            case .expression(_, let location):
                if let last = before?.utf8.last, last == UInt8(ascii: "'") || last == UInt8(ascii: "\"") {
                    diagnostics.append(.warning(
                        "this script is not read by a shell, and a value in it is inserted as one single-quoted shell word; the quote before ${{ becomes part of the text: read the value from env: instead", at: location))
                }
                before = nil
            }
        }
    }

    /// `item` → `ITEM`, `tasks.a.outputs.n` → `N`: a name for the env: fix.
    static func variableName(for expression: Expression) -> String {
        let last = "\(expression)".split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).last.map(String.init) ?? "VALUE"
        let name = last.uppercased()
        return name.first?.isNumber == false ? name : "VALUE"
    }
}

/// A `run:` script's place and the order of its text (true) and value (false) segments.
struct ShellContextKey: Hashable {
    var location: SourceLocation
    var shape: [Bool]
}
