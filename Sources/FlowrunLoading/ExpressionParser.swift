package import FlowrunModel

/// A problem in an expression, at a character offset inside it.
package struct ExpressionError: Error {
    package var message: String
    var offset: Int
}

/// Parses the inside of `${{ ... }}`.
///
/// Grammar, loosest first: `||`, `&&`, comparisons (`== != < <= > >=`), `!`,
/// then literals (`'text'`, `"text"`, numbers, `true`, `false`), operands
/// (`vars.x`, `tasks.T.outputs.K`, `host.os`, `item`, …), function calls
/// (`format('{0}', x)`, `ExpressionParser+Functions`) and parentheses.
package struct ExpressionParser {
    private enum Token: Equatable {
        case string(String)
        case number(Double)
        case word(String)
        case symbol(Symbol)
        case end
    }

    private enum Symbol: String {
        case or = "||", and = "&&", equal = "==", notEqual = "!=", lessOrEqual = "<=", greaterOrEqual = ">="
        case less = "<", greater = ">", not = "!", open = "(", close = ")", comma = ",", openBracket = "[", closeBracket = "]"

        /// The symbol at `byte` (two bytes with `next` where they make one).
        init?(_ byte: UInt8, next: UInt8?) {
            let equals = next == UInt8(ascii: "=")
            switch byte {
            case UInt8(ascii: "="): if equals { self = .equal } else { return nil }
            case UInt8(ascii: "!"): self = equals ? .notEqual : .not
            case UInt8(ascii: "<"): self = equals ? .lessOrEqual : .less
            case UInt8(ascii: ">"): self = equals ? .greaterOrEqual : .greater
            case UInt8(ascii: "&"): if next == byte { self = .and } else { return nil }
            case UInt8(ascii: "|"): if next == byte { self = .or } else { return nil }
            case UInt8(ascii: "("): self = .open
            case UInt8(ascii: ")"): self = .close
            case UInt8(ascii: ","): self = .comma
            case UInt8(ascii: "["): self = .openBracket
            case UInt8(ascii: "]"): self = .closeBracket
            default: return nil
            }
        }

        /// The comparison this symbol is (`&&` and `||` are not).
        var comparison: BinaryOperator? {
            switch self {
            case .equal: .equal
            case .notEqual: .notEqual
            case .less: .less
            case .lessOrEqual: .lessOrEqual
            case .greater: .greater
            case .greaterOrEqual: .greaterOrEqual
            case .or, .and, .not, .open, .close, .comma, .openBracket, .closeBracket: nil
            }
        }
    }

    private let names: NameTable
    private let locate: (Int) -> SourceLocation
    private var tokens: [(token: Token, offset: Int)] = []
    private var position = 0
    /// Parentheses and `!` recurse; a cap keeps `((((…` from exhausting the stack.
    private var depth = 0
    static let maxDepth = 64
    /// Chains like `a && b && …` grow the tree one level per operator.
    private var operatorCount = 0
    static let maxOperators = 256
    /// Inside a template call: what `params.NAME` stands for (`TemplateParameterScope`).
    var parameters: ((String) -> ParameterLookup)?

    /// `locate` turns an offset in `text` into a position in the file.
    package init(names: NameTable, locate: @escaping (Int) -> SourceLocation) {
        self.names = names
        self.locate = locate
    }

    package mutating func parse(_ text: String) throws(ExpressionError) -> Expression {
        tokens = try Self.tokenize(text)
        position = 0
        if tokens.first?.token == .end { throw ExpressionError(message: "empty expression", offset: 0) }
        let expression = try parseOr()
        guard current.token == .end else {
            throw ExpressionError(message: "unexpected \(Self.describe(current.token)) after a complete expression", offset: current.offset)
        }
        return expression
    }

    private var current: (token: Token, offset: Int) { tokens[position] }

    private mutating func parseOr() throws(ExpressionError) -> Expression {
        var left = try parseAnd()
        while current.token == .symbol(.or) {
            try countOperator()
            position += 1
            left = .binary(.or, left, try parseAnd())
        }
        return left
    }

    private mutating func parseAnd() throws(ExpressionError) -> Expression {
        var left = try parseComparison()
        while current.token == .symbol(.and) {
            try countOperator()
            position += 1
            left = .binary(.and, left, try parseComparison())
        }
        return left
    }

    private mutating func parseComparison() throws(ExpressionError) -> Expression {
        let left = try parseUnary()
        guard case .symbol(let symbol) = current.token, let op = symbol.comparison else {
            return left
        }
        position += 1
        let right = try parseUnary()
        if case .symbol(let next) = current.token, next.comparison != nil {
            throw ExpressionError(message: "comparisons do not chain; use parentheses or '&&'", offset: current.offset)
        }
        return .binary(op, left, right)
    }

    private mutating func countOperator() throws(ExpressionError) {
        operatorCount += 1
        guard operatorCount <= Self.maxOperators else {
            throw ExpressionError(message: "the expression has more than \(Self.maxOperators) operators", offset: current.offset)
        }
    }

    private mutating func parseUnary() throws(ExpressionError) -> Expression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else {
            throw ExpressionError(message: "the expression nests deeper than \(Self.maxDepth) levels", offset: current.offset)
        }
        if current.token == .symbol(.not) {
            position += 1
            return .not(try parseUnary())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws(ExpressionError) -> Expression {
        let (token, offset) = current
        position += 1
        switch token {
        case .string(let value): return .string(value)
        case .number(let value): return .number(value)
        case .word("true"): return .boolean(true)
        case .word("false"): return .boolean(false)
        case .word(let name) where current.token == .symbol(.open): return try call(name, at: offset)
        case .word(let path) where path.hasPrefix("params."): return try parameter(path, at: offset)
        case .word("args") where current.token == .symbol(.openBracket): return try argument(at: offset)
        case .word(let path): return .operand(try operand(path, at: offset))
        case .symbol(.open):
            let inner = try parseOr()
            guard current.token == .symbol(.close) else {
                throw ExpressionError(message: "expected ')' to close the '(' at offset \(offset)", offset: current.offset)
            }
            position += 1
            return inner
        default:
            throw ExpressionError(message: "expected a value, found \(Self.describe(token))", offset: offset)
        }
    }

    /// `args[N]`, `args` already read and `[` current: one word after `--`.
    private mutating func argument(at offset: Int) throws(ExpressionError) -> Expression {
        position += 1
        guard case .number(let value) = current.token, value >= 0, value.rounded() == value, value < 1_000_000,
              tokens[position + 1].token == .symbol(.closeBracket) else {
            throw ExpressionError(message: "expected args[N] with N a whole number from 0 to 999999 (args[0] is the first word after --)", offset: current.offset)
        }
        position += 2
        let number = Int(value)
        return .operand(Operand(text: "args[\(number)]", path: .argument(number), location: locate(offset)))
    }

    /// `name(argument, …)`, the name already read and `(` current.
    private mutating func call(_ name: String, at offset: Int) throws(ExpressionError) -> Expression {
        let function = try Self.function(named: name, at: offset)
        position += 1
        var arguments: [Expression] = []
        // One allocation: every function but format() takes at most three.
        arguments.reserveCapacity(3)
        if current.token != .symbol(.close) {
            while true {
                arguments.append(try parseOr())
                guard current.token == .symbol(.comma) else { break }
                try countOperator()
                position += 1
            }
        }
        guard current.token == .symbol(.close) else {
            throw ExpressionError(message: "expected ',' or ')' after an argument of \(function.rawValue)(), found \(Self.describe(current.token))", offset: current.offset)
        }
        position += 1
        try Self.check(function, arguments, at: offset)
        return .call(function, arguments)
    }

    // MARK: - Operands

    private func operand(_ path: String, at offset: Int) throws(ExpressionError) -> Operand {
        Operand(text: path, path: try resolve(path, at: offset), location: locate(offset))
    }

    private func resolve(_ path: String, at offset: Int) throws(ExpressionError) -> OperandPath {
        if path == "item" { return .item }
        if path == "index" { return .index }
        if path.hasPrefix("host.") || path == "host" {
            let name = String(path.dropFirst(5))
            guard let fact = HostFact(rawValue: name) else {
                throw ExpressionError(
                    message: "'\(path)': host offers os, arch or cpus\(Suggestion.hint(for: name, in: HostFact.allCases.map(\.rawValue)))",
                    offset: offset)
            }
            return .host(fact)
        }
        if path == "args" { return .arguments }
        if path.hasPrefix("item.") {
            let keys = path.dropFirst(5).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !keys.contains(where: \.isEmpty) else {
                throw ExpressionError(message: "expected item.KEY (or item.KEY.KEY), found '\(path)'", offset: offset)
            }
            return .itemField(keys)
        }
        guard let dot = path.firstIndex(of: ".") else {
            throw ExpressionError(
                message: "unknown value '\(path)'; expected vars.NAME, env.NAME, tasks.T.…, groups.G.…, joins.J.…, host.…, item, item.KEY, index, a function call or a quoted string",
                offset: offset)
        }
        let root = String(path[..<dot])
        let rest = String(path[path.index(after: dot)...])
        func require(_ condition: Bool, _ message: String) throws(ExpressionError) {
            if !condition { throw ExpressionError(message: message, offset: offset) }
        }
        switch root {
        case "vars", "env":
            try require(!rest.isEmpty && !rest.contains("."), "expected \(root).NAME, found '\(path)'")
            return root == "vars" ? .variable(rest) : .environment(rest)
        case "tasks":
            let (name, field) = split(rest, kind: .task)
            switch field {
            case "stdout": return .task(name, .stdout)
            case "status": return .task(name, .status)
            case "exit_code": return .task(name, .exitCode)
            case "duration": return .task(name, .duration)
            default:
                if field.hasPrefix("outputs."), field.count > 8, !field.dropFirst(8).contains(".") {
                    return .task(name, .output(String(field.dropFirst(8))))
                }
                throw ExpressionError(
                    message: "'\(path)': a task offers stdout, status, exit_code, duration or outputs.KEY\(Suggestion.hint(for: field, in: ["stdout", "status", "exit_code", "duration", "outputs"]))",
                    offset: offset)
            }
        case "groups":
            let (name, field) = split(rest, kind: .group)
            guard let groupField = GroupField(rawValue: field) else {
                throw ExpressionError(message: "'\(path)': a group offers status or results\(Suggestion.hint(for: field, in: GroupField.allCases.map(\.rawValue)))", offset: offset)
            }
            return .group(name, groupField)
        case "joins":
            let (name, field) = split(rest, kind: .join)
            guard let joinField = JoinField(rawValue: field) else {
                throw ExpressionError(message: "'\(path)': a join offers status, timed_out or succeeded\(Suggestion.hint(for: field, in: JoinField.allCases.map(\.rawValue)))", offset: offset)
            }
            return .join(name, joinField)
        default:
            throw ExpressionError(
                message: "unknown value '\(path)'\(Suggestion.hint(for: root, in: ["vars", "env", "tasks", "groups", "joins", "host", "item", "index"])); expected vars., env., tasks., groups., joins., host., item or index",
                offset: offset)
        }
    }

    /// Splits `NAME.FIELD` where NAME may itself hold dots: the longest known
    /// name of the right kind wins; else the first segment is the name.
    private func split(_ rest: String, kind: NameTable.Kind) -> (name: String, field: String) {
        var best: (String, String)?
        var index = rest.startIndex
        while let dot = rest[index...].firstIndex(of: ".") {
            let name = String(rest[..<dot])
            if names.kinds[name] == kind { best = (name, String(rest[rest.index(after: dot)...])) }
            index = rest.index(after: dot)
        }
        if let best { return best }
        guard let dot = rest.firstIndex(of: ".") else { return (rest, "") }
        return (String(rest[..<dot]), String(rest[rest.index(after: dot)...]))
    }

    // MARK: - Tokens

    /// Scans UTF-8 bytes: walking `Character`s (grapheme breaking) cost a
    /// quarter of a dry run. The tokens are those of `Character`s still: an
    /// ASCII byte is read as one unless a non-ASCII scalar follows (an
    /// accent may join it); a non-ASCII `Character` (a letter, digit or
    /// space, or in a string) is read whole, and offsets are turned back
    /// into `Character`s at the end.
    private static func tokenize(_ text: String) throws(ExpressionError) -> [(token: Token, offset: Int)] {
        let bytes = Array(text.utf8)
        let characterOffsets = CharacterOffsets(text, bytes)
        var tokens: [(token: Token, offset: Int)] = []
        // Room for a token every four bytes, about what expressions hold: grown
        // by doubling from one, the array was reallocated four times each.
        tokens.reserveCapacity(bytes.count / 4 + 2)
        /// The `Character` starting at byte `index`, and its length in bytes
        /// (sliced there: the grapheme is read from that scalar on).
        func character(at index: Int) -> (Character, length: Int) {
            let character = text[text.utf8.index(text.startIndex, offsetBy: index)...].first!
            return (character, character.utf8.count)
        }
        /// The byte at `index` when it is a `Character` of its own.
        func ascii(at index: Int) -> UInt8? {
            guard index < bytes.count, bytes[index] < 0x80 else { return nil }
            if index + 1 < bytes.count, bytes[index + 1] >= 0x80, character(at: index).length > 1 { return nil }
            return bytes[index]
        }
        /// The length of the digit at `index` (`isNumber` beyond ASCII), or nil.
        func digit(at index: Int) -> Int? {
            if let byte = ascii(at: index) { return isASCIIDigit(byte) ? 1 : nil }
            guard index < bytes.count else { return nil }
            let (character, length) = character(at: index)
            return character.isNumber ? length : nil
        }
        func fail(_ message: String, at offset: Int) -> ExpressionError {
            ExpressionError(message: message, offset: characterOffsets[offset])
        }
        /// A number from `start` (a digit, or `-` before one) `length` bytes long so far.
        func number(from start: Int, length: Int) throws(ExpressionError) -> Int {
            var index = start + length
            while index < bytes.count {
                if ascii(at: index) == UInt8(ascii: ".") {
                    index += 1
                } else if let length = digit(at: index) {
                    index += length
                } else {
                    break
                }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard let value = Double(text) else { throw fail("'\(text)' is not a number", at: start) }
            tokens.append((.number(value), start))
            return index
        }
        var index = 0
        while index < bytes.count {
            let start = index
            guard let byte = ascii(at: index) else {
                let (character, length) = character(at: index)
                if character.isWhitespace {
                    index += length
                } else if character.isNumber {
                    index = try number(from: start, length: length)
                } else if character.isLetter {
                    // Names are ASCII: a non-ASCII letter is a word of its own.
                    index += length
                    tokens.append((.word(String(character)), start))
                } else {
                    throw fail("unexpected character '\(character)'", at: start)
                }
                continue
            }
            if byte == 0x20 || (0x09...0x0D).contains(byte) {
                index += 1
            } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                var value = ""
                index += 1
                var closed = false
                // Plain runs are appended whole.
                var run = index
                while index < bytes.count {
                    let next = ascii(at: index)
                    guard next == byte || (next == UInt8(ascii: "\\") && byte == UInt8(ascii: "\"")) else {
                        index += bytes[index] < 0x80 ? 1 : character(at: index).length
                        continue
                    }
                    value += String(decoding: bytes[run..<index], as: UTF8.self)
                    if next == byte {
                        // 'it''s' — a doubled quote is a quote.
                        if ascii(at: index + 1) == byte {
                            value.unicodeScalars.append(Unicode.Scalar(byte))
                            index += 2
                            run = index
                            continue
                        }
                        closed = true
                        index += 1
                        break
                    }
                    if let escaped = ascii(at: index + 1) {
                        value.unicodeScalars.append(escaped == UInt8(ascii: "n") ? "\n" : escaped == UInt8(ascii: "t") ? "\t" : Unicode.Scalar(escaped))
                        index += 2
                    } else if index + 1 < bytes.count {
                        let (escaped, length) = character(at: index + 1)
                        value.append(escaped)
                        index += 1 + length
                    } else {
                        value.append("\\")
                        index += 1
                    }
                    run = index
                }
                guard closed else { throw fail("unterminated string (missing \(Character(Unicode.Scalar(byte))))", at: start) }
                tokens.append((.string(value), start))
            } else if isASCIIDigit(byte) {
                index = try number(from: start, length: 1)
            } else if byte == UInt8(ascii: "-"), digit(at: index + 1) != nil {
                index = try number(from: start, length: 1)
            } else if isASCIILetter(byte) || byte == UInt8(ascii: "_") {
                index += 1
                while let next = ascii(at: index), isPathByte(next) { index += 1 }
                tokens.append((.word(String(decoding: bytes[start..<index], as: UTF8.self)), start))
            } else if let symbol = Symbol(byte, next: ascii(at: index + 1)) {
                tokens.append((.symbol(symbol), start))
                index += symbol.rawValue.utf8.count
            } else if byte == UInt8(ascii: "=") || byte == UInt8(ascii: "&") || byte == UInt8(ascii: "|") {
                let character = Character(Unicode.Scalar(byte))
                throw fail("'\(character)' is not an operator; did you mean '\(character)\(character)'?", at: start)
            } else {
                throw fail("unexpected character '\(Character(Unicode.Scalar(byte)))'", at: start)
            }
        }
        tokens.append((.end, bytes.count))
        if !characterOffsets.areBytes {
            for token in tokens.indices { tokens[token].offset = characterOffsets[tokens[token].offset] }
        }
        return tokens
    }

    /// Byte offsets in an expression as `Character` offsets, the unit of
    /// its columns: the same numbers unless the text holds a non-ASCII
    /// byte or a `\r\n` (one `Character`).
    private struct CharacterOffsets {
        /// For each byte offset (and the end), the `Character` it is in; empty when they are the same.
        private var table: [Int] = []
        var areBytes: Bool { table.isEmpty }

        init(_ text: String, _ bytes: [UInt8]) {
            guard bytes.contains(where: { $0 >= 0x80 || $0 == 0x0D }) else { return }
            table.reserveCapacity(bytes.count + 1)
            var count = 0
            for character in text {
                table += repeatElement(count, count: character.utf8.count)
                count += 1
            }
            table.append(count)
        }

        subscript(byteOffset: Int) -> Int { table.isEmpty ? byteOffset : table[byteOffset] }
    }

    /// Names may hold letters, digits, `_`, `.` and `-` (SPEC §1), all ASCII.
    private static func isPathByte(_ byte: UInt8) -> Bool {
        isASCIILetter(byte) || isASCIIDigit(byte) || byte == 0x5F || byte == 0x2E || byte == 0x2D
    }

    private static func isASCIIDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    private static func isASCIILetter(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte | 0x20) }

    private static func describe(_ token: Token) -> String {
        switch token {
        case .string(let value): return "string '\(value)'"
        case .number(let value): return "number \(value)"
        case .word(let word): return "'\(word)'"
        case .symbol(let symbol): return "'\(symbol.rawValue)'"
        case .end: return "the end of the expression"
        }
    }
}
