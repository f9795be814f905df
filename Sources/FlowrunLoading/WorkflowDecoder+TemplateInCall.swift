import FlowrunYAML
import FlowrunModel

/// One piece of a template key's text: split once, reused by every call.
enum TemplatePiece {
    case text(String)
    /// `${{ params.NAME }}` alone: replaced by the call's value (the inside as written kept for errors).
    case parameter(String, SourceLocation, written: String)
    /// Any other `${{ … }}` (it may read `params.X` inside): parsed for each call.
    case expression(String, SourceLocation)
}

extension WorkflowDecoder {
    /// `template(_:node:insideShell:)` while a template call is decoded: the
    /// key's text is split at its `${{ }}` once (a template's keys are read
    /// again for every call), then each call's values fill it in. The
    /// result's `source` is the text with the values in: what `--dry-run` shows.
    mutating func templateInCall(_ text: String, node: YAMLNode, insideShell: Bool) -> Template {
        let nodeLocation = location(node)
        guard let scope = parameterScope else { return Template(source: text, segments: [.text(text)], location: nodeLocation) }
        let pieces: [TemplatePiece]
        // The same place holds the same text in every call unless a parameter was filled in as text before.
        if let known = templatePieces[nodeLocation], known.text == text {
            pieces = known.pieces
        } else {
            guard let found = splitAtExpressions(text, at: nodeLocation, insideShell: insideShell) else {
                return Template(source: text, segments: [], location: nodeLocation)
            }
            pieces = found
            templatePieces[nodeLocation] = (text, found)
        }
        var segments: [Template.Segment] = []
        segments.reserveCapacity(pieces.count)
        // The text as it runs, only when a parameter is in it: text shared otherwise.
        let fills = pieces.contains { piece in
            switch piece {
            case .text: return false
            case .parameter: return true
            case .expression(let inner, _): return Self.firstRange(of: "params.", in: Substring(inner)) != nil
            }
        }
        var filled = ""
        for piece in pieces {
            switch piece {
            case .text(let text):
                segments.append(.text(text))
                if fills { filled += text }
            case .parameter(let name, let start, let written):
                if let value = scope.values[name], let values = scope.segments(for: name, insideShell: insideShell, at: start) {
                    segments += values
                    filled += value.template == nil && insideShell ? ShellText.word(value.text) : value.text
                } else {
                    // Undeclared: the parser says so, with did-you-mean.
                    _ = parseInCall(written, at: start, scope: scope)
                }
            case .expression(let inner, let start):
                guard let expression = parseInCall(inner, at: start, scope: scope) else { continue }
                segments.append(.expression(expression, start))
                if fills { filled += Self.firstRange(of: "params.", in: Substring(inner)) == nil ? "${{" + inner + "}}" : "${{ \(expression) }}" }
            }
        }
        guard fills else { return Template(source: text, segments: segments, location: nodeLocation) }
        expandedBytes += filled.utf8.count
        return Template(source: filled, segments: segments, location: nodeLocation)
    }

    private mutating func parseInCall(_ text: String, at start: SourceLocation, scope: TemplateParameterScope) -> Expression? {
        var parser = ExpressionParser(names: names) { offset in
            SourceLocation(file: start.file, line: start.line, column: start.column + 3 + offset)
        }
        parser.parameters = { scope.lookup($0) }
        do throws(ExpressionError) {
            return try parser.parse(text)
        } catch {
            self.error(error.message, at: SourceLocation(file: start.file, line: start.line, column: start.column + 3 + error.offset))
            return nil
        }
    }

    /// The pieces of a key's text, each `${{` placed in the file, a
    /// parameter told apart; nil (and an error) when one is not closed.
    private mutating func splitAtExpressions(_ text: String, at nodeLocation: SourceLocation, insideShell: Bool) -> [TemplatePiece]? {
        let scanned = scanExpressions(text, at: nodeLocation, insideShell: insideShell)
        guard scanned.complete else { return nil }
        return scanned.pieces.map { piece in
            switch piece {
            case .text(let literal):
                return .text(literal)
            case .expression(let expression, let start):
                if let name = TemplateParameterScope.parameterName(in: expression) {
                    return .parameter(name, start, written: String(expression))
                }
                return .expression(String(expression), start)
            }
        }
    }
}
