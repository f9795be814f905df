/// A JSON document as read from task output: members in order, numbers as written.
///
/// Strict RFC 8259 (no comments, trailing commas, NaN or single quotes), so
/// "parses as JSON" means what `jq` would say. Nesting deeper than
/// `maxDepth` is treated as not JSON rather than risking the stack.
package enum JSONValue: Sendable, Equatable {
    case string(String)
    /// The number's text as written (already valid JSON), so `1.50` and
    /// `12345678901234567890` survive unchanged.
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([Member])

    package struct Member: Sendable, Equatable {
        package var key: String
        package var value: JSONValue

        package init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    static let maxDepth = 512

    /// The document in `text`, or nil if `text` is not exactly one JSON value.
    package static func parse(_ text: String) -> JSONValue? {
        parse(bytes: Array(text.utf8))
    }

    /// The document in `bytes` (UTF-8), or nil if they are not exactly one JSON value.
    package static func parse(bytes: [UInt8]) -> JSONValue? {
        var reader = Reader(bytes: bytes)
        reader.skipSpace()
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipSpace()
        return reader.index == reader.bytes.count ? value : nil
    }

    /// Compact JSON: no spaces, members in order.
    package var compactText: String {
        var text = ""
        write(to: &text)
        return text
    }

    func write(to text: inout String) {
        switch self {
        case .string(let string): Self.writeQuoted(string, to: &text)
        case .number(let number): text += number
        case .bool(let value): text += value ? "true" : "false"
        case .null: text += "null"
        case .array(let items):
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                item.write(to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { text += "," }
                Self.writeQuoted(member.key, to: &text)
                text += ":"
                member.value.write(to: &text)
            }
            text += "}"
        }
    }

    /// `"…"` with the escapes JSON requires: quote, backslash and control characters.
    package static func writeQuoted(_ string: String, to text: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(string.utf8.count + 2)
        appendQuoted(string, to: &bytes)
        text += String(decoding: bytes, as: UTF8.self)
    }

    /// The one escaping routine for all of flowrun's JSON. Works on UTF-8
    /// bytes and copies unescaped runs whole: events and the summary quote
    /// every name and path, hundreds of thousands of times in a big run.
    package static func appendQuoted(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var runStart = 0
            // No table: an array made per call would cost every quoted name an allocation.
            func hex(_ nibble: UInt8) -> UInt8 { nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10 }
            for offset in utf8.indices {
                let byte = utf8[offset]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F || byte == 0xC2 else { continue }
                // DEL and the C1 controls (U+0080–U+009F, 0xC2 0x80–0x9F in
                // UTF-8; U+009B is a one-byte CSI to a terminal) are escaped
                // too: JSON lines reach consoles as they are.
                if byte == 0xC2 {
                    guard offset + 1 < utf8.count, (0x80...0x9F).contains(utf8[offset + 1]) else { continue }
                    let value = utf8[offset + 1]
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<offset]))
                    runStart = offset + 2
                    bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex(value >> 4), hex(value & 0xF)])
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<offset]))
                runStart = offset + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex(byte >> 4), hex(byte & 0xF)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

// MARK: - Reading

extension JSONValue {
    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func value(depth: Int) -> JSONValue? {
            guard depth < JSONValue.maxDepth, let byte = current else { return nil }
            switch byte {
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        private mutating func array(depth: Int) -> JSONValue? {
            index += 1
            var items: [JSONValue] = []
            skipSpace()
            if current == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipSpace()
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipSpace()
                guard let separator = current else { return nil }
                index += 1
                if separator == UInt8(ascii: "]") { return .array(items) }
                guard separator == UInt8(ascii: ",") else { return nil }
            }
        }

        private mutating func object(depth: Int) -> JSONValue? {
            index += 1
            var members: [Member] = []
            skipSpace()
            if current == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard current == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard current == UInt8(ascii: ":") else { return nil }
                index += 1
                skipSpace()
                guard let value = value(depth: depth + 1) else { return nil }
                members.append(Member(key: key, value: value))
                skipSpace()
                guard let separator = current else { return nil }
                index += 1
                if separator == UInt8(ascii: "}") { return .object(members) }
                guard separator == UInt8(ascii: ",") else { return nil }
            }
        }

        private mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return nil }
            let matches = word.withUTF8Buffer { bytes[index..<index + count].elementsEqual($0) }
            guard matches else { return nil }
            index += count
            return value
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, kept as written.
        private mutating func number() -> JSONValue? {
            let start = index
            func digits() -> Int {
                let first = index
                while let byte = current, (0x30...0x39).contains(byte) { index += 1 }
                return index - first
            }
            if current == UInt8(ascii: "-") { index += 1 }
            if current == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                return nil
            }
            if current == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return nil }
            }
            if let byte = current, byte | 0x20 == UInt8(ascii: "e") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return nil }
            }
            return .number(String(decoding: bytes[start..<index], as: UTF8.self))
        }

        /// A string at `"`; nil on a raw control character, a bad escape or a lone surrogate.
        private mutating func string() -> String? {
            index += 1
            var runStart = index
            // The bytes once an escape is found, in one growing buffer: a
            // `String.UnicodeScalarView` appended to run by run and escape by
            // escape was copied whole each time (a state file keeping 100,000
            // lines of stdout took 15 s to read, at each no-op run).
            var decoded: [UInt8] = []
            var escaped = false
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    defer { index += 1 }
                    // No escape in it (nearly every string): one copy, not two.
                    guard escaped else { return String(decoding: bytes[runStart..<index], as: UTF8.self) }
                    decoded.append(contentsOf: bytes[runStart..<index])
                    return String(decoding: decoded, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    escaped = true
                    decoded.append(contentsOf: bytes[runStart..<index])
                    index += 1
                    guard let scalar = escape() else { return nil }
                    UTF8.encode(scalar) { decoded.append($0) }
                    runStart = index
                case 0..<0x20:
                    return nil
                default:
                    index += 1
                }
            }
            return nil
        }

        private mutating func escape() -> Unicode.Scalar? {
            guard let byte = current else { return nil }
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                guard let high = hex4() else { return nil }
                if (0xD800..<0xDC00).contains(high) {
                    guard current == UInt8(ascii: "\\") else { return nil }
                    index += 1
                    guard current == UInt8(ascii: "u") else { return nil }
                    index += 1
                    guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                    return Unicode.Scalar(0x10000 + (high - 0xD800) << 10 + (low - 0xDC00))
                }
                return Unicode.Scalar(high)  // nil for a lone low surrogate
            default: return nil
            }
        }

        private mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                guard let digit = Self.hexDigit(byte) else { return nil }
                value = value << 4 | digit
            }
            index += 4
            return value
        }

        private static func hexDigit(_ byte: UInt8) -> UInt32? {
            switch byte {
            case 0x30...0x39: return UInt32(byte - 0x30)
            case 0x41...0x46: return UInt32(byte - 0x41 + 10)
            case 0x61...0x66: return UInt32(byte - 0x61 + 10)
            default: return nil
            }
        }
    }
}
