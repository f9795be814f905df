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
        case symbol(String)
        case end
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
        tokens = try Self.tokenize(Array(text))
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
        while current.token == .symbol("||") {
            try countOperator()
            position += 1
            left = .binary(.or, left, try parseAnd())
        }
        return left
    }

    private mutating func parseAnd() throws(ExpressionError) -> Expression {
        var left = try parseComparison()
        while current.token == .symbol("&&") {
            try countOperator()
            position += 1
            left = .binary(.and, left, try parseComparison())
        }
        return left
    }

    private mutating func parseComparison() throws(ExpressionError) -> Expression {
        let left = try parseUnary()
        guard case .symbol(let symbol) = current.token, let op = BinaryOperator(rawValue: symbol), op != .and, op != .or else {
            return left
        }
        position += 1
        let right = try parseUnary()
        if case .symbol(let next) = current.token, let nextOp = BinaryOperator(rawValue: next), nextOp != .and, nextOp != .or {
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
        if current.token == .symbol("!") {
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
        case .word(let name) where current.token == .symbol("("): return try call(name, at: offset)
        case .word(let path) where path.hasPrefix("params."): return try parameter(path, at: offset)
        case .word("args") where current.token == .symbol("["): return try argument(at: offset)
        case .word(let path): return .operand(try operand(path, at: offset))
        case .symbol("("):
            let inner = try parseOr()
            guard current.token == .symbol(")") else {
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
              tokens[position + 1].token == .symbol("]") else {
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
        if current.token != .symbol(")") {
            while true {
                arguments.append(try parseOr())
                guard current.token == .symbol(",") else { break }
                try countOperator()
                position += 1
            }
        }
        guard current.token == .symbol(")") else {
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

    private static func tokenize(_ characters: [Character]) throws(ExpressionError) -> [(token: Token, offset: Int)] {
        var tokens: [(token: Token, offset: Int)] = []
        var index = 0
        while index < characters.count {
            let character = characters[index]
            let start = index
            if isWhitespace(character) {
                index += 1
            } else if character == "'" || character == "\"" {
                var value = ""
                index += 1
                var closed = false
                // Plain runs are appended whole: Character by Character cost a
                // quarter of validating a file whose expressions hold literals.
                var run = index
                while index < characters.count {
                    let next = characters[index]
                    guard next == character || (next == "\\" && character == "\"") else {
                        index += 1
                        continue
                    }
                    value += text(of: characters[run..<index])
                    if next == character {
                        // 'it''s' — a doubled quote is a quote.
                        if index + 1 < characters.count, characters[index + 1] == character {
                            value.append(character)
                            index += 2
                            run = index
                            continue
                        }
                        closed = true
                        index += 1
                        break
                    }
                    if index + 1 < characters.count {
                        let escaped = characters[index + 1]
                        value.append(escaped == "n" ? "\n" : escaped == "t" ? "\t" : escaped)
                        index += 2
                    } else {
                        value.append(next)
                        index += 1
                    }
                    run = index
                }
                guard closed else { throw ExpressionError(message: "unterminated string (missing \(character))", offset: start) }
                tokens.append((.string(value), start))
            } else if isDigit(character) || (character == "-" && index + 1 < characters.count && isDigit(characters[index + 1])) {
                index += 1
                while index < characters.count, isDigit(characters[index]) || characters[index] == "." { index += 1 }
                let text = String(characters[start..<index])
                guard let value = Double(text) else { throw ExpressionError(message: "'\(text)' is not a number", offset: start) }
                tokens.append((.number(value), start))
            } else if isLetter(character) || character == "_" {
                index += 1
                while index < characters.count, isPathCharacter(characters[index]) { index += 1 }
                tokens.append((.word(text(of: characters[start..<index])), start))
            } else if character == "(" || character == ")" || character == "," {
                // Before the two-character operators: a call's punctuation
                // need not build and compare a pair each time.
                tokens.append((.symbol(String(character)), start))
                index += 1
            } else {
                let pair = index + 1 < characters.count ? String(characters[index...index + 1]) : ""
                if ["==", "!=", "<=", ">=", "&&", "||"].contains(pair) {
                    tokens.append((.symbol(pair), start))
                    index += 2
                } else if "<>!(),[]".contains(character) {
                    tokens.append((.symbol(String(character)), start))
                    index += 1
                } else if character == "=" || character == "&" || character == "|" {
                    throw ExpressionError(message: "'\(character)' is not an operator; did you mean '\(character)\(character)'?", offset: start)
                } else {
                    throw ExpressionError(message: "unexpected character '\(character)'", offset: start)
                }
            }
        }
        tokens.append((.end, characters.count))
        return tokens
    }

    /// The characters as a String; all-ASCII (every name but an odd first
    /// letter) without appending Character by Character.
    private static func text(of characters: ArraySlice<Character>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count)
        for character in characters {
            guard let byte = character.asciiValue, character.utf8.count == 1 else { return String(characters) }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Names may hold letters, digits, `_`, `.` and `-` (SPEC §1).
    private static func isPathCharacter(_ character: Character) -> Bool {
        guard let byte = character.asciiValue else { return false }
        return isASCIILetter(byte) || (0x30...0x39).contains(byte) || byte == 0x5F || byte == 0x2E || byte == 0x2D
    }

    // ASCII first: Character's Unicode properties cost a table lookup each,
    // a tenth of validating 100,000 expressions. Same answers as `isLetter`,
    // `isNumber` and `isWhitespace` (for ASCII, those are exactly these).
    private static func isLetter(_ character: Character) -> Bool {
        guard let byte = character.asciiValue else { return character.isLetter }
        return isASCIILetter(byte)
    }

    private static func isDigit(_ character: Character) -> Bool {
        guard let byte = character.asciiValue else { return character.isNumber }
        return (0x30...0x39).contains(byte)
    }

    private static func isWhitespace(_ character: Character) -> Bool {
        guard let byte = character.asciiValue else { return character.isWhitespace }
        return byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte | 0x20) }

    private static func describe(_ token: Token) -> String {
        switch token {
        case .string(let value): return "string '\(value)'"
        case .number(let value): return "number \(value)"
        case .word(let word): return "'\(word)'"
        case .symbol(let symbol): return "'\(symbol)'"
        case .end: return "the end of the expression"
        }
    }
}
