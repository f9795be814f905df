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

    public init(_ text: String) throws(Problem) {
        var parts: [Part] = []
        var literal = ""
        let characters = Array(text.unicodeScalars)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            if (character == "{" && next == "{") || (character == "}" && next == "}") {
                literal.unicodeScalars.append(character)
                index += 2
            } else if character == "{" {
                var end = index + 1
                var number = 0
                while end < characters.count, let digit = Self.digit(characters[end]) {
                    // Capped: a huge index is as out of range as a big one, without overflow.
                    number = min(number * 10 + digit, 1_000_000)
                    end += 1
                }
                guard end > index + 1, end < characters.count, characters[end] == "}" else {
                    throw Problem(message: "'{' starts a placeholder like {0}; write '{{' for a literal brace", offset: index)
                }
                if !literal.isEmpty { parts.append(.text(literal)) }
                literal = ""
                parts.append(.argument(number))
                index = end + 1
            } else if character == "}" {
                throw Problem(message: "'}' without a '{' before it; write '}}' for a literal brace", offset: index)
            } else {
                literal.unicodeScalars.append(character)
                index += 1
            }
        }
        if !literal.isEmpty { parts.append(.text(literal)) }
        self.parts = parts
    }

    /// The highest `{N}` used, if any.
    public var highestArgument: Int? {
        parts.compactMap { if case .argument(let n) = $0 { n } else { nil } }.max()
    }

    private static func digit(_ scalar: Unicode.Scalar) -> Int? {
        (0x30...0x39).contains(scalar.value) ? Int(scalar.value - 0x30) : nil
    }
}
