import FlowrunYAML
import FlowrunModel

extension WorkflowDecoder {
    /// Splits a scalar into text and `${{ … }}` parts and parses each expression,
    /// reporting problems at their exact place in the file when it can be found.
    mutating func template(_ text: String, node: YAMLNode, insideShell: Bool = false) -> Template {
        let nodeLocation = location(node)
        var segments: [Template.Segment] = []
        var rest = Substring(text)
        // Each expression is searched for in the file from where the last one was found.
        var cursor = source.cursor(at: nodeLocation)
        while let open = Self.expressionStart(in: rest) {
            if open.lowerBound > rest.startIndex { segments.append(.text(String(rest[..<open.lowerBound]))) }
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
                return Template(source: text, segments: segments, location: nodeLocation)
            }
            let expressionText = String(inner[..<close.lowerBound])
            var parser = ExpressionParser(names: names) { offset in
                SourceLocation(file: start.file, line: start.line, column: start.column + 3 + offset)
            }
            do throws(ExpressionError) {
                segments.append(.expression(try parser.parse(expressionText), start))
            } catch {
                self.error(error.message, at: SourceLocation(file: start.file, line: start.line, column: start.column + 3 + error.offset))
            }
            rest = inner[close.upperBound...]
        }
        if !rest.isEmpty { segments.append(.text(String(rest))) }
        return Template(source: text, segments: segments, location: nodeLocation)
    }

    /// The `}}` that ends an expression, skipping any inside quoted strings.
    /// Scans UTF-8 bytes (quotes and braces are ASCII, and no byte of a
    /// multi-byte character is): a tenth of validating 100,000 expressions
    /// went to walking Characters here.
    private static func closingBraces(in text: Substring) -> Range<Substring.Index>? {
        let utf8 = text.utf8
        var quote: UInt8?
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                quote = byte
            } else if byte == UInt8(ascii: "}") {
                let next = utf8.index(after: index)
                if next < utf8.endIndex, utf8[next] == UInt8(ascii: "}") { return index..<utf8.index(after: next) }
            }
            index = utf8.index(after: index)
        }
        return nil
    }

    /// The next `${{`, found in UTF-8 bytes.
    private static func expressionStart(in text: Substring) -> Range<Substring.Index>? {
        let utf8 = text.utf8
        var from = utf8.startIndex
        while let dollar = utf8[from...].firstIndex(of: UInt8(ascii: "$")) {
            if utf8[dollar...].starts(with: "${{".utf8) { return dollar..<utf8.index(dollar, offsetBy: 3) }
            from = utf8.index(after: dollar)
        }
        return nil
    }
}
