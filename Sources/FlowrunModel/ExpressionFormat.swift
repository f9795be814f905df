/// The first argument of `format()`, read as GitHub reads it: `{0}`, `{1}`, …
/// stand for the arguments after it; `{{` and `}}` are a literal brace; any
/// other brace is an error.
public struct ExpressionFormat: Sendable, Equatable {
    public enum Part: Sendable, Equatable {
        case text(String)
        case argument(Int)
    }

    public var parts: [Part]

    /// Why a format text cannot be read, and at which character.
    public struct Problem: Error, Sendable, Equatable {
        public var message: String
        public var offset: Int
    }

    /// Reads UTF-8 bytes (braces and digits are ASCII), appending the plain
    /// runs between braces whole: scalar by scalar cost as much as the rest
    /// of a `format()` call, checked while the file is read and again when
    /// the dry run shows its value.
    public init(_ text: String) throws(Problem) {
        let bytes = Array(text.utf8)
        var parts: [Part] = []
        // At most a text before and a placeholder for each brace, and a text after.
        parts.reserveCapacity(2 * bytes.count { $0 == UInt8(ascii: "{") } + 1)
        var literal = ""
        var index = 0
        /// Where the plain text not yet in `literal` starts.
        var run = 0
        func problem(_ message: String, at index: Int) -> Problem {
            // The offset counts scalars: every byte that does not continue one.
            Problem(message: message, offset: bytes[..<index].count { $0 & 0xC0 != 0x80 })
        }
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "{") || byte == UInt8(ascii: "}") else {
                index += 1
                continue
            }
            literal += String(decoding: bytes[run..<index], as: UTF8.self)
            if index + 1 < bytes.count, bytes[index + 1] == byte {
                // `{{` or `}}`: a literal brace.
                literal.unicodeScalars.append(Unicode.Scalar(byte))
                index += 2
            } else if byte == UInt8(ascii: "{") {
                var end = index + 1
                var number = 0
                while end < bytes.count, (0x30...0x39).contains(bytes[end]) {
                    // Capped: a huge index is as out of range as a big one, without overflow.
                    number = min(number * 10 + Int(bytes[end] - 0x30), 1_000_000)
                    end += 1
                }
                guard end > index + 1, end < bytes.count, bytes[end] == UInt8(ascii: "}") else {
                    throw problem("'{' starts a placeholder like {0}; write '{{' for a literal brace", at: index)
                }
                if !literal.isEmpty { parts.append(.text(literal)) }
                literal = ""
                parts.append(.argument(number))
                index = end + 1
            } else {
                throw problem("'}' without a '{' before it; write '}}' for a literal brace", at: index)
            }
            run = index
        }
        literal += String(decoding: bytes[run...], as: UTF8.self)
        if !literal.isEmpty { parts.append(.text(literal)) }
        self.parts = parts
    }

    /// The highest `{N}` used, if any.
    public var highestArgument: Int? {
        var highest: Int?
        for case .argument(let n) in parts { highest = max(highest ?? n, n) }
        return highest
    }
}
