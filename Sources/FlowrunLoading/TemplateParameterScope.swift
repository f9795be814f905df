import FlowrunYAML
import FlowrunModel

/// The parameters of one template call while its task is decoded: each
/// name's value, from `with:` or the default.
struct TemplateParameterScope {
    /// One parameter's value.
    struct Value {
        /// As written (`linux`, `${{ item }}`).
        var text: String
        /// Where it was written: errors about the value point there.
        var node: YAMLNode?
        /// Parsed when the text holds `${{ }}` (e.g. `with: {os: ${{ item }}}`), read at run time.
        var template: Template?
        /// Checking a template on its own: a required parameter has no value yet.
        var isPlaceholder = false
    }

    var template: TaskTemplate
    var values: [String: Value]

    /// Inside an expression: a literal becomes a string, a value that is one
    /// `${{ expr }}` becomes that expression.
    func lookup(_ name: String) -> ParameterLookup {
        guard let value = values[name] else { return .problem(unknownParameter(name)) }
        if value.isPlaceholder { return .value(.string("")) }
        guard let template = value.template else { return .value(.string(value.text)) }
        if template.segments.count == 1, case .expression(let expression, _) = template.segments[0] { return .value(expression) }
        return .problem("the value of params.\(name) ('\(value.text)') mixes text and ${{ }}: inside an expression use it alone, as ${{ params.\(name) }}")
    }

    func unknownParameter(_ name: String) -> String {
        let declared = template.parameters.map(\.name)
        let list = declared.isEmpty ? "it declares none under params:" : "it declares " + declared.joined(separator: ", ")
        return "template '\(template.name)' has no parameter '\(name)'\(Suggestion.hint(for: name, in: declared)); \(list)"
    }

    /// The segments that stand for `${{ params.NAME }}` written alone: the
    /// value's text and its own expressions. In `run:` the text is a string
    /// value, quoted at run time for the shell context it lands in, as any
    /// value is: never script text.
    func segments(for name: String, insideShell: Bool, at location: SourceLocation) -> [Template.Segment]? {
        guard let value = values[name] else { return nil }
        if value.isPlaceholder { return [] }
        guard let template = value.template else { return [insideShell ? .expression(.string(value.text), location) : .text(value.text)] }
        return template.segments.map { segment in
            if case .text(let text) = segment, insideShell { return .expression(.string(text), location) }
            return segment
        }
    }

    /// `params.NAME` when `text` (the inside of `${{ }}`) is only that.
    /// Bytes, not Characters: this runs for every expression of every call.
    static func parameterName(in text: Substring) -> String? {
        let utf8 = text.utf8
        var start = utf8.startIndex
        var end = utf8.endIndex
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        while start < end, isSpace(utf8[start]) { start = utf8.index(after: start) }
        while end > start, isSpace(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        let word = utf8[start..<end]
        guard word.starts(with: "params.".utf8) else { return nil }
        let name = word.dropFirst(7)
        guard !name.isEmpty, name.allSatisfy({ byte in
            (0x61...0x7A).contains(byte | 0x20) || (0x30...0x39).contains(byte) || byte == 0x5F || byte == 0x2D
        }) else { return nil }
        return String(Substring(name))
    }
}

/// Text placed in a shell script as one word, quoted only when it must be.
enum ShellText {
    static func word(_ text: String) -> String {
        let plain = !text.isEmpty && text.utf8.allSatisfy { byte in
            (0x61...0x7A).contains(byte | 0x20) || (0x30...0x39).contains(byte) || "_-./:@%+,".utf8.contains(byte)
        }
        guard !plain else { return text }
        // As the engine quotes a value (`TemplateRenderer.shellWord`): 'text', each ' as '\''.
        var bytes: [UInt8] = [0x27]
        for byte in text.utf8 {
            if byte == 0x27 { bytes += [0x27, 0x5C, 0x27, 0x27] } else { bytes.append(byte) }
        }
        bytes.append(0x27)
        return String(decoding: bytes, as: UTF8.self)
    }
}
