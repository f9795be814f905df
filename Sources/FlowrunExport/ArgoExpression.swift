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

    /// Why Argo's expression language cannot do what `expression` does, if
    /// it cannot: `format()` with a text known only at run time, `join()`,
    /// `split()`, `toJSON()`, `fromJSON()` and `contains()` over an array
    /// (Argo's values are text; flowrun's JSON values have no equivalent there).
    static func unsupported(_ expression: Expression) -> String? {
        switch expression {
        case .string, .number, .boolean, .operand: return nil
        case .not(let inner): return unsupported(inner)
        case .binary(_, let left, let right): return unsupported(left) ?? unsupported(right)
        case .call(let function, let arguments):
            switch function {
            case .format:
                guard case .string(let text) = arguments[0], (try? ExpressionFormat(text)) != nil else {
                    return "format() on Argo needs its text written in the file, not read at run time"
                }
            case .join, .split, .toJSON, .fromJSON:
                return "\(function.rawValue)() works on JSON values, which Argo's expressions do not have; do it in the script instead"
            case .contains:
                if arguments[0].givesJSON {
                    return "contains() over an array has no Argo equivalent; test the item in the script instead"
                }
            case .startsWith, .endsWith, .replace, .trim:
                break
            }
            return arguments.lazy.compactMap(unsupported).first
        }
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
            case .binary(.and, let left, let right):
                // GitHub's value semantics: `a && b` is a when a is false, else b.
                let first = value(left, resolve, &failed)
                return "(\(bool(left, resolve, &failed)) ? \(value(right, resolve, &failed)) : \(first))"
            case .binary(.or, let left, let right):
                let first = value(left, resolve, &failed)
                return "(\(bool(left, resolve, &failed)) ? \(first) : \(value(right, resolve, &failed)))"
            case .not, .binary:
                return "(\(bool(expression, resolve, &failed)) ? 'true' : 'false')"
            case .call(let function, let arguments):
                return call(function, arguments, resolve, &failed)
            }
        }

        /// A function as text; `unsupported(_:)` has refused the rest.
        static func call(_ function: ExpressionFunction, _ arguments: [Expression], _ resolve: Resolve, _ failed: inout Bool) -> String {
            func text(_ index: Int) -> String { value(arguments[index], resolve, &failed) }
            switch function {
            case .format:
                guard case .string(let pattern) = arguments[0], let format = try? ExpressionFormat(pattern) else {
                    failed = true
                    return "''"
                }
                let parts = format.parts.map { part -> String in
                    switch part {
                    case .text(let literal): return quoted(literal)
                    case .argument(let index): return index + 1 < arguments.count ? text(index + 1) : "''"
                    }
                }
                return parts.isEmpty ? "''" : "(" + parts.joined(separator: " + ") + ")"
            case .replace: return "sprig.replace(\(text(1)), \(text(2)), \(text(0)))"
            case .trim: return "sprig.trim(\(text(0)))"
            case .contains, .startsWith, .endsWith:
                return "(\(bool(.call(function, arguments), resolve, &failed)) ? 'true' : 'false')"
            case .join, .split, .toJSON, .fromJSON:
                failed = true
                return "''"
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
            case .call(let function, let arguments) where [.contains, .startsWith, .endsWith].contains(function):
                // Case-insensitive, as flowrun's: both sides lower-cased.
                let name = function == .contains ? "contains" : function == .startsWith ? "hasPrefix" : "hasSuffix"
                let whole = value(arguments[0], resolve, &failed), part = value(arguments[1], resolve, &failed)
                return "sprig.\(name)(sprig.lower(\(part)), sprig.lower(\(whole)))"
            case .string, .number, .operand, .call:
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

    /// Whether the value may be a JSON array: `fromJSON()`, `split()`, `groups.G.results`.
    fileprivate var givesJSON: Bool {
        switch self {
        case .call(let function, _): return function == .fromJSON || function == .split
        case .operand(let operand): if case .group(_, .results) = operand.path { return true } else { return false }
        case .binary(.and, let left, let right), .binary(.or, let left, let right): return left.givesJSON || right.givesJSON
        default: return false
        }
    }
}
