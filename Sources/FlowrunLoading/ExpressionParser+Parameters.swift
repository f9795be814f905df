package import FlowrunModel

/// What `params.NAME` stands for in one template call.
package enum ParameterLookup {
    case value(Expression)
    case problem(String)
}

extension ExpressionParser {
    /// `params.NAME`: replaced by the call's value while the file is read;
    /// outside a template there are no parameters.
    func parameter(_ path: String, at offset: Int) throws(ExpressionError) -> Expression {
        let name = String(path.dropFirst("params.".count))
        guard let parameters else {
            throw ExpressionError(message: "'\(path)': parameters can be read only in the keys of a template (under templates:)", offset: offset)
        }
        switch parameters(name) {
        case .value(let expression): return expression
        case .problem(let message): throw ExpressionError(message: message, offset: offset)
        }
    }
}
