package import FlowrunModel

/// Evaluates a parsed `${{ }}` expression against run-time values.
///
/// Evaluation never fails: a missing value reads as `''` (see
/// `ExpressionContext`), comparisons are defined between any two values (see
/// `ExpressionValue`), and the parser has bounded the tree (64 levels, 256
/// operators), so plain recursion is safe.
///
/// Comparisons and `!` yield booleans. `&&` and `||` yield booleans too (not
/// an operand, as in JavaScript), and short-circuit: `a || b` reads `b` only
/// when `a` is false.
package enum ExpressionEvaluator {
    package static func evaluate(_ expression: Expression, in context: some ExpressionContext) -> ExpressionValue {
        switch expression {
        case .string(let text): return .string(text)
        case .number(let number): return .number(number)
        case .boolean(let value): return .boolean(value)
        case .operand(let operand): return context.value(of: operand.path) ?? .string("")
        case .not(let inner): return .boolean(!evaluate(inner, in: context).isTrue)
        case .binary(.and, let left, let right):
            return .boolean(evaluate(left, in: context).isTrue && evaluate(right, in: context).isTrue)
        case .binary(.or, let left, let right):
            return .boolean(evaluate(left, in: context).isTrue || evaluate(right, in: context).isTrue)
        case .binary(let op, let left, let right):
            return .boolean(ExpressionValue.compare(evaluate(left, in: context), op, evaluate(right, in: context)))
        }
    }

    /// The truth of a condition (`if:`).
    package static func isTrue(_ expression: Expression, in context: some ExpressionContext) -> Bool {
        evaluate(expression, in: context).isTrue
    }
}
