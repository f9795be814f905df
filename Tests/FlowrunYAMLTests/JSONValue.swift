import FlowrunYAML

/// A JSON value, to compare loaded YAML with the suite's `in.json`.
///
/// Numbers are doubles so `1`, `1.0` and `1e0` compare equal; objects are
/// dictionaries so key order does not matter.
enum JSONValue: Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    var description: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return String(value)
        case .number(let value): return String(value)
        case .string(let value): return String(reflecting: value)
        case .array(let items): return "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .object(let members):
            let body = members.sorted { $0.key < $1.key }.map { "\(String(reflecting: $0.key)): \($0.value)" }
            return "{" + body.joined(separator: ", ") + "}"
        }
    }
}

// MARK: - YAML → JSON

extension JSONValue {
    /// Why a YAML node has no JSON form (a mapping key that is not a scalar, an unknown tag).
    struct Unrepresentable: Error, CustomStringConvertible {
        var description: String
    }

    private static let core = "tag:yaml.org,2002:"

    /// Converts a loaded node the way the suite's `in.json` files were made:
    /// plain scalars by the core schema, quoted ones as strings, `!!str`,
    /// `!!int`, `!!float`, `!!bool`, `!!null` respected, other tags ignored.
    init(_ node: YAMLNode) throws(Unrepresentable) {
        switch node.content {
        case .scalar(let scalar):
            self = try Self.scalar(scalar, tag: node.tag)
        case .sequence(let items):
            var values: [JSONValue] = []
            values.reserveCapacity(items.count)
            for item in items { values.append(try JSONValue(item)) }
            self = .array(values)
        case .mapping(let pairs):
            var members: [String: JSONValue] = [:]
            for pair in pairs {
                guard let key = pair.key.scalar else {
                    throw Unrepresentable(description: "a \(pair.key.kindDescription) as a mapping key at \(pair.key.mark)")
                }
                members[key.text] = try JSONValue(pair.value)
            }
            self = .object(members)
        }
    }

    private static func scalar(_ scalar: YAMLScalar, tag: String?) throws(Unrepresentable) -> JSONValue {
        switch tag {
        case nil:
            return resolved(scalar)
        case core + "str", "!":
            return .string(scalar.text)
        case core + "null":
            return .null
        case core + "bool", core + "int", core + "float":
            // A tag makes even a quoted scalar a bool or number.
            let plain = YAMLScalar(scalar.text)
            let value = tag == core + "bool" ? plain.bool.map(JSONValue.bool) : plain.double.map(JSONValue.number)
            guard let value else {
                throw Unrepresentable(description: "'\(scalar.text)' is not a valid \(tag!.dropFirst(core.count))")
            }
            return value
        default:
            // Local and other tags: the suite's JSON keeps the text.
            return .string(scalar.text)
        }
    }

    /// The YAML 1.2 core schema, through the loader's own resolution.
    private static func resolved(_ scalar: YAMLScalar) -> JSONValue {
        if scalar.isNull { return .null }
        if let bool = scalar.bool { return .bool(bool) }
        if let number = scalar.double { return .number(number) }
        return .string(scalar.text)
    }
}

// MARK: - JSON streams

extension JSONValue {
    struct SyntaxError: Error, CustomStringConvertible {
        var offset: Int
        var message: String
        var description: String { "JSON syntax error at byte \(offset): \(message)" }
    }

    /// Parses zero or more JSON values written one after another (the suite's
    /// `in.json` for a multi-document stream); `JSONSerialization` takes only one.
    static func parseStream(_ bytes: [UInt8]) throws(SyntaxError) -> [JSONValue] {
        var reader = Reader(bytes: bytes)
        var values: [JSONValue] = []
        reader.skipWhitespace()
        while !reader.isAtEnd {
            values.append(try reader.value())
            reader.skipWhitespace()
        }
        return values
    }

    /// A recursive-descent reader over UTF-8 bytes.
    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var isAtEnd: Bool { index >= bytes.count }

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        func fail(_ message: String) -> SyntaxError {
            SyntaxError(offset: index, message: message)
        }

        mutating func value() throws(SyntaxError) -> JSONValue {
            skipWhitespace()
            guard index < bytes.count else { throw fail("expected a value, found the end") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object()
            case UInt8(ascii: "["): return try array()
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return try number()
            }
        }

        mutating func literal(_ word: String) throws(SyntaxError) {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw fail("expected '\(word)'")
            }
            index += expected.count
        }

        mutating func expect(_ byte: UInt8) throws(SyntaxError) {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else {
                throw fail("expected '\(Character(Unicode.Scalar(byte)))'")
            }
            index += 1
        }

        /// Consumes `byte` (after whitespace) if it is next.
        mutating func take(_ byte: UInt8) -> Bool {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func object() throws(SyntaxError) -> JSONValue {
            try expect(UInt8(ascii: "{"))
            var members: [String: JSONValue] = [:]
            if take(UInt8(ascii: "}")) { return .object(members) }
            repeat {
                skipWhitespace()
                let key = try string()
                try expect(UInt8(ascii: ":"))
                members[key] = try value()
            } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "}"))
            return .object(members)
        }

        mutating func array() throws(SyntaxError) -> JSONValue {
            try expect(UInt8(ascii: "["))
            var items: [JSONValue] = []
            if take(UInt8(ascii: "]")) { return .array(items) }
            repeat { items.append(try value()) } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "]"))
            return .array(items)
        }

        mutating func number() throws(SyntaxError) -> JSONValue {
            let start = index
            let allowed = Set("+-0123456789.eE".utf8)
            while index < bytes.count, allowed.contains(bytes[index]) { index += 1 }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard let number = Double(text) else { throw fail("bad number '\(text)'") }
            return .number(number)
        }

        mutating func string() throws(SyntaxError) -> String {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string") }
            index += 1
            var scalars = String.UnicodeScalarView()
            var run = index  // start of the current run of unescaped bytes
            func flush(_ end: Int) {
                scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars)
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    flush(index)
                    index += 1
                    return String(scalars)
                }
                guard byte == UInt8(ascii: "\\") else { index += 1; continue }
                flush(index)
                index += 1
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code) {
                        guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw fail("expected a low surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("expected a low surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                default:
                    throw fail("bad escape")
                }
                run = index
            }
            throw fail("unterminated string")
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard index + 4 <= bytes.count,
                  let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
            else { throw fail("bad \\u escape") }
            index += 4
            return code
        }
    }
}
