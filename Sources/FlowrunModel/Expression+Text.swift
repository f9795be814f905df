extension Expression: CustomStringConvertible {
    /// The expression written back out, e.g. `tasks.a.status == 'failed' && !(vars.dry == 'yes')`.
    public var description: String {
        var text = ""
        write(into: &text, parentPrecedence: 0)
        return text
    }

    /// Into one string: the dry run writes out each expression of thousands
    /// of tasks, and a string per node (an array and a join per call) was
    /// most of that.
    private func write(into text: inout String, parentPrecedence: Int) {
        switch self {
        case .string(let value):
            text += "'"
            text += value.utf8.contains(UInt8(ascii: "'")) ? value.replacingAll("'", with: "''") : value
            text += "'"
        case .number(let value): text += value.formatted
        case .boolean(let value): text += value ? "true" : "false"
        case .operand(let operand): text += operand.text
        case .not(let inner):
            text += "!"
            inner.write(into: &text, parentPrecedence: 4)
        case .binary(let op, let left, let right):
            let precedence = op == .or ? 1 : op == .and ? 2 : 3
            let parenthesized = precedence < parentPrecedence
            if parenthesized { text += "(" }
            left.write(into: &text, parentPrecedence: precedence)
            text += " " + op.rawValue + " "
            right.write(into: &text, parentPrecedence: precedence + 1)
            if parenthesized { text += ")" }
        case .call(let function, let arguments):
            text += function.rawValue
            text += "("
            for (position, argument) in arguments.enumerated() {
                if position > 0 { text += ", " }
                argument.write(into: &text, parentPrecedence: 0)
            }
            text += ")"
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
