package import FlowrunModel

/// Evaluates a parsed `${{ }}` expression against run-time values.
///
/// A missing value reads as `''` (see `ExpressionContext`), comparisons are
/// defined between any two values (see `ExpressionValue`), and the parser has
/// bounded the tree (64 levels, 256 operators), so plain recursion is safe.
/// Only a function can fail, on a value known at run time: `fromJSON()` of
/// text that is not JSON, `format()` of a text whose braces do not match its
/// values. `evaluate(_:at:in:)` reports that, failing the task; the
/// unlocated `evaluate(_:in:)` reads such a call as `''`.
///
/// Comparisons and `!` yield booleans. `&&` and `||` yield one of their
/// operands, as in GitHub Actions and JavaScript, and short-circuit: `a && b`
/// is `a` when `a` is false, else `b`; `a || b` is `a` when `a` is true, else
/// `b`. So `cond && 'yes' || 'no'` is a ternary (when `'yes'` is true).
package enum ExpressionEvaluator {
    package static func evaluate(_ expression: Expression, in context: some ExpressionContext) -> ExpressionValue {
        let evaluation = Evaluation(context: context, strict: false)
        do { return try evaluation.value(expression) } catch { return .string("") }
    }

    /// As `evaluate(_:in:)`, but a function that cannot give a value fails,
    /// naming the expression at `location`.
    package static func evaluate(
        _ expression: Expression, at location: SourceLocation, in context: some ExpressionContext
    ) throws(TemplateRenderError) -> ExpressionValue {
        let evaluation = Evaluation(context: context, strict: true)
        do { return try evaluation.value(expression) } catch {
            throw TemplateRenderError(location: location, message: "${{ \(expression) }}: \(error.message)")
        }
    }

    /// The truth of a condition (`if:`).
    package static func isTrue(_ expression: Expression, in context: some ExpressionContext) -> Bool {
        evaluate(expression, in: context).isTrue
    }

    /// The truth of a condition, failing as `evaluate(_:at:in:)` does.
    package static func isTrue(
        _ expression: Expression, at location: SourceLocation, in context: some ExpressionContext
    ) throws(TemplateRenderError) -> Bool {
        try evaluate(expression, at: location, in: context).isTrue
    }

    private struct Evaluation<Context: ExpressionContext> {
        let context: Context
        /// False: a function that fails gives `''` rather than an error.
        let strict: Bool

        func value(_ expression: Expression) throws(ExpressionFunctionError) -> ExpressionValue {
            switch expression {
            case .string(let text): return .string(text)
            case .number(let number): return .number(number)
            case .boolean(let value): return .boolean(value)
            case .operand(let operand):
                if case .host(let fact) = operand.path { return HostFacts.value(of: fact) }
                return context.value(of: operand.path) ?? .string("")
            case .not(let inner): return .boolean(!(try value(inner)).isTrue)
            case .binary(.and, let left, let right):
                let first = try value(left)
                return first.isTrue ? try value(right) : first
            case .binary(.or, let left, let right):
                let first = try value(left)
                return first.isTrue ? first : try value(right)
            case .binary(let op, let left, let right):
                return .boolean(ExpressionValue.compare(try value(left), op, try value(right)))
            case .call(let function, let arguments):
                var values: [ExpressionValue] = []
                values.reserveCapacity(arguments.count)
                for argument in arguments { values.append(try value(argument)) }
                do { return try ExpressionFunctions.apply(function, values) } catch {
                    if strict { throw error }
                    return .string("")
                }
            }
        }
    }
}
