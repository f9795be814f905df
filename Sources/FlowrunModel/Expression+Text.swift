extension Expression: CustomStringConvertible {
    /// The expression written back out, e.g. `tasks.a.status == 'failed' && !(vars.dry == 'yes')`.
    public var description: String { text(parentPrecedence: 0) }

    private func text(parentPrecedence: Int) -> String {
        switch self {
        case .string(let value): return "'" + value.replacingAll("'", with: "''") + "'"
        case .number(let value): return value.formatted
        case .boolean(let value): return value ? "true" : "false"
        case .operand(let operand): return operand.text
        case .not(let inner): return "!" + inner.text(parentPrecedence: 4)
        case .binary(let op, let left, let right):
            let precedence = op == .or ? 1 : op == .and ? 2 : 3
            let text = "\(left.text(parentPrecedence: precedence)) \(op.rawValue) \(right.text(parentPrecedence: precedence + 1))"
            return precedence < parentPrecedence ? "(\(text))" : text
        case .call(let function, let arguments):
            return function.rawValue + "(" + arguments.map { $0.text(parentPrecedence: 0) }.joined(separator: ", ") + ")"
        }
    }
}

extension String {
    /// Replaces every occurrence of `target` (Foundation-free).
    package func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}
