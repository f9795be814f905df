package import FlowrunModel

/// What an expression can read at run time; the engine implements it.
///
/// `nil` means "no value": an output key that was never written, a task that
/// never ran, an unset `env.NAME`. The evaluator reads it as the empty
/// string, the way GitHub Actions does, because the validator has already
/// rejected unknown names and reads outside a task's needs: what is left is
/// "the upstream task did not produce it", and `''` lets `if:` test for it.
package protocol ExpressionContext {
    func value(of path: OperandPath) -> ExpressionValue?
    /// The whole value's length in bytes when `value(of:)` does not hold it
    /// all (a stdout over 1 MiB keeps only its end in memory); nil: measure
    /// `value(of:)`.
    func byteCount(of path: OperandPath) -> Int?
}

extension ExpressionContext {
    package func byteCount(of path: OperandPath) -> Int? { nil }
}

/// A context backed by a dictionary: for `vars`/`env` at the top level, for
/// tests, and for anything known up front.
package struct ExpressionValues: ExpressionContext, Sendable {
    package var values: [OperandPath: ExpressionValue]

    package init(_ values: [OperandPath: ExpressionValue] = [:]) {
        self.values = values
    }

    package func value(of path: OperandPath) -> ExpressionValue? { values[path] }
}
