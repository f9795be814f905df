import FlowrunYAML
import FlowrunModel

extension WorkflowDecoder {
    /// Splits a scalar into text and `${{ … }}` parts and parses each expression,
    /// reporting problems at their exact place in the file when it can be found.
    mutating func template(_ text: String, node: YAMLNode, insideShell: Bool = false) -> Template {
        if parameterScope != nil { return templateInCall(text, node: node, insideShell: insideShell) }
        let nodeLocation = location(node)
        var segments: [Template.Segment] = []
        for piece in scanExpressions(text, at: nodeLocation, insideShell: insideShell).pieces {
            switch piece {
            case .text(let literal):
                segments.append(.text(literal))
            case .expression(let expressionText, let start):
                var parser = ExpressionParser(names: names) { offset in
                    SourceLocation(file: start.file, line: start.line, column: start.column + 3 + offset)
                }
                do throws(ExpressionError) {
                    segments.append(.expression(try parser.parse(String(expressionText)), start))
                } catch {
                    self.error(error.message, at: SourceLocation(file: start.file, line: start.line, column: start.column + 3 + error.offset))
                }
            }
        }
        return Template(source: text, segments: segments, location: nodeLocation)
    }

    /// A piece of a scalar cut at its `${{ … }}`s.
    enum ScannedPiece {
        case text(String)
        /// The text between `${{` and `}}`, and where the `${{` is in the file.
        case expression(Substring, SourceLocation)
    }

    /// Cuts `text` at each `${{ … }}`, placing each in the file (searched
    /// from where the last one was found; the node's place if not found).
    /// An unclosed `${{` is an error, and then `complete` is false and the
    /// pieces stop before it.
    mutating func scanExpressions(_ text: String, at nodeLocation: SourceLocation, insideShell: Bool) -> (pieces: [ScannedPiece], complete: Bool) {
        // Most scalars have no expression: no place in the file to look up.
        guard Self.expressionStart(in: Substring(text)) != nil else { return (text.isEmpty ? [] : [.text(text)], true) }
        var pieces: [ScannedPiece] = []
        var rest = Substring(text)
        var cursor = source.cursor(at: nodeLocation)
        while let open = Self.expressionStart(in: rest) {
            if open.lowerBound > rest.startIndex { pieces.append(.text(String(rest[..<open.lowerBound]))) }
            let found = cursor.flatMap { source.find("${{", from: $0) }
            let start = found.map { SourceLocation(file: file, line: $0.location.line, column: $0.location.column) } ?? nodeLocation
            cursor = found.map { source.advanced($0, by: 3) }
            let inner = rest[open.upperBound...]
            guard let close = Self.closingBraces(in: inner) else {
                error("'${{' is not closed by '}}'", at: start)
                return (pieces, false)
            }
            pieces.append(.expression(inner[..<close.lowerBound], start))
            rest = inner[close.upperBound...]
        }
        if !rest.isEmpty { pieces.append(.text(String(rest))) }
        return (pieces, true)
    }

    /// The `}}` that ends an expression, skipping any inside quoted strings.
    /// Scans UTF-8 bytes (quotes and braces are ASCII, and no byte of a
    /// multi-byte character is): a tenth of validating 100,000 expressions
    /// went to walking Characters here.
    static func closingBraces(in text: Substring) -> Range<Substring.Index>? {
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
    static func expressionStart(in text: Substring) -> Range<Substring.Index>? {
        let utf8 = text.utf8
        var from = utf8.startIndex
        while let dollar = utf8[from...].firstIndex(of: UInt8(ascii: "$")) {
            if utf8[dollar...].starts(with: "${{".utf8) { return dollar..<utf8.index(dollar, offsetBy: 3) }
            from = utf8.index(after: dollar)
        }
        return nil
    }
}
