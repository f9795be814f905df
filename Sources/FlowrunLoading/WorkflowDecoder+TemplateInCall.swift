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
        if let known = templatePieces[nodeLocation] {
            pieces = known
        } else {
            guard let found = splitAtExpressions(text, at: nodeLocation, insideShell: insideShell) else {
                return Template(source: text, segments: [], location: nodeLocation)
            }
            pieces = found
            templatePieces[nodeLocation] = found
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
                if let value = scope.values[name], let values = scope.segments(for: name, insideShell: insideShell) {
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

    /// The pieces of a key's text, each `${{` placed in the file; nil (and
    /// an error) when one is not closed. The same checks as `template`.
    private mutating func splitAtExpressions(_ text: String, at nodeLocation: SourceLocation, insideShell: Bool) -> [TemplatePiece]? {
        var pieces: [TemplatePiece] = []
        var rest = Substring(text)
        var cursor = source.cursor(at: nodeLocation)
        while let open = Self.expressionStart(in: rest) {
            if open.lowerBound > rest.startIndex { pieces.append(.text(String(rest[..<open.lowerBound]))) }
            let found = cursor.flatMap { source.find("${{", from: $0) }
            let start = found.map { SourceLocation(file: file, line: $0.location.line, column: $0.location.column) } ?? nodeLocation
            cursor = found.map { source.advanced($0, by: 3) }
            if insideShell, open.lowerBound > rest.startIndex, let before = rest[..<open.lowerBound].last, before == "'" || before == "\"" {
                diagnostics.append(.warning(
                    "a value in run: is already inserted as one shell-quoted word; the quote before ${{ becomes part of the text", at: start))
            }
            let inner = rest[open.upperBound...]
            guard let close = Self.closingBraces(in: inner) else {
                error("'${{' is not closed by '}}'", at: start)
                return nil
            }
            let expression = inner[..<close.lowerBound]
            if let name = TemplateParameterScope.parameterName(in: expression) {
                pieces.append(.parameter(name, start, written: String(expression)))
            } else {
                pieces.append(.expression(String(expression), start))
            }
            rest = inner[close.upperBound...]
        }
        if !rest.isEmpty { pieces.append(.text(String(rest))) }
        return pieces
    }
}
