import FlowrunModel

/// flowrun expressions as Argo expression-template text (`{{= … }}`, the
/// expr language): `if:` becomes a DAG task's `when`, and a computed value
/// (`${{ a == b }}`) becomes an argument. Values are read through accessors,
/// never pasted into the expression text, so no value can change its meaning.
enum ArgoExpression {
    /// The expression as a boolean, with flowrun's truth rules: false, `0`
    /// and empty or `false` (any case) text are false.
    static func condition(_ expression: Expression, _ operand: (Operand) -> ArgoValue?) -> String? {
        var failed = false
        let text = Translator.bool(expression, operand, &failed)
        return failed ? nil : text
    }

    /// The expression as text, the way flowrun inserts it.
    static func value(_ expression: Expression, _ operand: (Operand) -> ArgoValue?) -> String? {
        var failed = false
        let text = Translator.value(expression, operand, &failed)
        return failed ? nil : text
    }

    /// An expr string literal; braces are escaped so `}}` cannot end the tag early.
    static func quoted(_ text: String) -> String {
        var result = "'"
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "'": result += "\\'"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "{": result += "\\u007b"
            case "}": result += "\\u007d"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "'"
    }

    /// Argo's phase words as flowrun's: a skip by `when` or by `depends` is
    /// `skipped`; an error is `failed` (Argo cannot tell a timeout apart).
    static func status(_ accessor: String) -> String {
        "(\(accessor) == 'Succeeded' ? 'succeeded' : (\(accessor) == 'Skipped' || \(accessor) == 'Omitted') ? 'skipped' : "
            + "(\(accessor) == 'Failed' || \(accessor) == 'Error') ? 'failed' : sprig.lower(\(accessor)))"
    }

    private enum Translator {
        typealias Resolve = (Operand) -> ArgoValue?

        static func value(_ expression: Expression, _ resolve: Resolve, _ failed: inout Bool) -> String {
            switch expression {
            case .string(let text): return quoted(text)
            case .number(let number): return quoted(number.formatted)
            case .boolean(let flag): return quoted(flag ? "true" : "false")
            case .operand(let operand):
                guard let resolved = resolve(operand) else {
                    failed = true
                    return "''"
                }
                return resolved.kind == .phase ? status(resolved.path.accessor) : resolved.path.accessor
            case .not, .binary:
                return "(\(bool(expression, resolve, &failed)) ? 'true' : 'false')"
            }
        }

        static func bool(_ expression: Expression, _ resolve: Resolve, _ failed: inout Bool) -> String {
            switch expression {
            case .boolean(let flag): return flag ? "true" : "false"
            case .not(let inner): return "!" + bool(inner, resolve, &failed)
            case .binary(.and, let left, let right): return "(\(bool(left, resolve, &failed)) && \(bool(right, resolve, &failed)))"
            case .binary(.or, let left, let right): return "(\(bool(left, resolve, &failed)) || \(bool(right, resolve, &failed)))"
            case .binary(let op, let left, let right):
                // flowrun compares numerically when both sides are numbers; a
                // number literal on either side is the case Argo can honour.
                if left.isNumberLiteral || right.isNumberLiteral {
                    return "(asFloat(\(value(left, resolve, &failed))) \(op.rawValue) asFloat(\(value(right, resolve, &failed))))"
                }
                return "(\(value(left, resolve, &failed)) \(op.rawValue) \(value(right, resolve, &failed)))"
            case .string, .number, .operand:
                let text = value(expression, resolve, &failed)
                return "(\(text) != '' && sprig.lower(\(text)) != 'false' && \(text) != '0')"
            }
        }
    }
}

extension Expression {
    fileprivate var isNumberLiteral: Bool {
        if case .number = self { return true }
        return false
    }
}
