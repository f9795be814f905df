import CYaml

/// One event of libyaml's event stream, as Swift values.
enum YAMLEvent {
    case streamStart
    case streamEnd
    case documentStart(Mark)
    case documentEnd
    case alias(anchor: String, Mark)
    case scalar(YAMLScalar, anchor: String?, tag: String?, Mark)
    case sequenceStart(anchor: String?, tag: String?, Mark)
    case sequenceEnd
    case mappingStart(anchor: String?, tag: String?, Mark)
    case mappingEnd
}

/// Owns a libyaml event parser over a copy of the input, and frees both in `deinit`.
///
/// libyaml keeps pointers to the parser struct and the input buffer, so both
/// live at stable heap addresses for the parser's whole lifetime.
final class YAMLParser {
    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private let input: UnsafeMutableBufferPointer<UInt8>
    /// The bytes of `input` that hold text (it has room for at least one).
    private let inputCount: Int

    init(bytes: [UInt8]) {
        parser = .allocate(capacity: 1)
        input = .allocate(capacity: max(bytes.count, 1))
        _ = input.initialize(from: bytes)
        inputCount = bytes.count
        yaml_parser_initialize(parser)
        yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
        yaml_parser_set_input_string(parser, input.baseAddress, bytes.count)
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
        input.deallocate()
    }

    /// The next event, or libyaml's own error at its problem mark.
    func next() throws(YAMLProblem) -> YAMLEvent {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else { throw currentProblem() }
        defer { yaml_event_delete(&event) }
        let mark = Self.mark(event.start_mark)
        switch event.type {
        case YAML_STREAM_START_EVENT:
            return .streamStart
        case YAML_STREAM_END_EVENT:
            return .streamEnd
        case YAML_DOCUMENT_START_EVENT:
            return .documentStart(mark)
        case YAML_DOCUMENT_END_EVENT:
            return .documentEnd
        case YAML_ALIAS_EVENT:
            return .alias(anchor: Self.string(event.data.alias.anchor) ?? "", mark)
        case YAML_SCALAR_EVENT:
            let data = event.data.scalar
            let text = String(decoding: UnsafeBufferPointer(start: data.value, count: data.length), as: UTF8.self)
            return .scalar(
                YAMLScalar(text, style: Self.style(data.style)),
                anchor: Self.string(data.anchor), tag: Self.string(data.tag), mark)
        case YAML_SEQUENCE_START_EVENT:
            let data = event.data.sequence_start
            return .sequenceStart(anchor: Self.string(data.anchor), tag: Self.string(data.tag), mark)
        case YAML_SEQUENCE_END_EVENT:
            return .sequenceEnd
        case YAML_MAPPING_START_EVENT:
            let data = event.data.mapping_start
            return .mappingStart(anchor: Self.string(data.anchor), tag: Self.string(data.tag), mark)
        case YAML_MAPPING_END_EVENT:
            return .mappingEnd
        default:
            throw YAMLProblem("unexpected event from libyaml", at: mark)
        }
    }

    private func currentProblem() -> YAMLProblem {
        let problem = parser.pointee.problem.map { String(cString: $0) } ?? "unknown YAML error"
        let context = parser.pointee.context.map { String(cString: $0) }
        let message = context.map { "\(problem) (\($0))" } ?? problem
        // The reader (control characters, bad encoding) reports a byte offset
        // and leaves problem_mark zeroed.
        if parser.pointee.error == YAML_READER_ERROR {
            let value = parser.pointee.problem_value
            let found = value >= 0 ? " (found U+\(String(value, radix: 16, uppercase: true).leftPadded(to: 4)))" : ""
            let offset = min(parser.pointee.problem_offset, inputCount)
            return YAMLProblem(message + found, at: YAMLInput.mark(ofByte: offset, in: input.prefix(inputCount)))
        }
        let index = Int(parser.pointee.problem_mark.index)
        if index < inputCount, input[index] == 0x09 {
            return YAMLProblem("a tab cannot indent YAML; indent with spaces (\(message))", at: Self.mark(parser.pointee.problem_mark))
        }
        if let hint = flowPunctuationHint(problem: problem) {
            return YAMLProblem(hint + " (\(message))", at: Self.mark(parser.pointee.problem_mark))
        }
        return YAMLProblem(message, at: Self.mark(parser.pointee.problem_mark))
    }

    /// libyaml's "did not find expected ',' or '}'" where the flow
    /// collection holds an unquoted `${{`: its braces are flow punctuation
    /// there. Says what to quote, as FORMAT.md's "Writing scripts and
    /// expressions in YAML" does.
    private func flowPunctuationHint(problem: String) -> String? {
        let closer: String
        let example: String
        switch problem {
        case "did not find expected ',' or '}'": (closer, example) = ("{ … }", "env: { TAG: \"${{ vars.tag }}\" }")
        case "did not find expected ',' or ']'": (closer, example) = ("[ … ]", "sources: [\"src/${{ item }}.c\"]")
        default: return nil
        }
        // libyaml stops at the first `{` of an unquoted `${{`: the plain value ended at `$`.
        let index = Int(parser.pointee.problem_mark.index)
        guard index > 0, index + 1 < inputCount, input[index - 1] == UInt8(ascii: "$"),
              input[index] == UInt8(ascii: "{"), input[index + 1] == UInt8(ascii: "{") else { return nil }
        return "a ${{ }} inside \(closer) must be quoted, because { and } are flow punctuation there: "
            + "put the whole value in quotes, as in \(example), or write it in block style"
    }

    /// The one place where libyaml's 0-based marks become 1-based (byte
    /// offsets become marks in `YAMLInput.mark(ofByte:in:)`).
    private static func mark(_ mark: yaml_mark_t) -> Mark {
        Mark(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
    }

    private static func style(_ style: yaml_scalar_style_t) -> YAMLScalar.Style {
        switch style {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: return .singleQuoted
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: return .doubleQuoted
        case YAML_LITERAL_SCALAR_STYLE: return .literal
        case YAML_FOLDED_SCALAR_STYLE: return .folded
        default: return .plain
        }
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
