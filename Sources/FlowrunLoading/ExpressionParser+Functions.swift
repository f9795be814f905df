import FlowrunModel
import FlowrunValues

/// Function calls: the name, the number of arguments, and what can be known
/// wrong before the run — a literal `format()` text with a stray brace or a
/// `{N}` past its arguments, a literal `fromJSON()` text that is not JSON, an
/// empty literal separator.
extension ExpressionParser {
    static func function(named name: String, at offset: Int) throws(ExpressionError) -> ExpressionFunction {
        if let function = ExpressionFunction.named(name) { return function }
        let names = ExpressionFunction.allCases.map(\.rawValue)
        throw ExpressionError(
            message: "unknown function '\(name)()'\(Suggestion.hint(for: name, in: names)); the functions are \(names.joined(separator: ", "))",
            offset: offset)
    }

    static func check(_ function: ExpressionFunction, _ arguments: [Expression], at offset: Int) throws(ExpressionError) {
        let arity = function.arity
        guard arity.contains(arguments.count) else {
            let wanted: String
            if arity.upperBound == .max {
                wanted = "at least \(arity.lowerBound) argument\(arity.lowerBound == 1 ? "" : "s")"
            } else if arity.count == 1 {
                wanted = "\(arity.lowerBound) argument\(arity.lowerBound == 1 ? "" : "s")"
            } else {
                wanted = "\(arity.lowerBound) or \(arity.upperBound) arguments"
            }
            throw ExpressionError(
                message: "\(function.rawValue)() takes \(wanted), found \(arguments.count): write \(function.signature)", offset: offset)
        }
        func literal(_ position: Int) -> String? {
            if case .string(let text) = arguments[position] { return text }
            return nil
        }
        switch function {
        case .format:
            guard let text = literal(0) else { return }
            let format: ExpressionFormat
            do { format = try ExpressionFormat(text) } catch {
                throw ExpressionError(message: "format(): \(error.message) (at character \(error.offset + 1) of its text)", offset: offset)
            }
            if let highest = format.highestArgument, highest >= arguments.count - 1 {
                let given = arguments.count - 1
                throw ExpressionError(
                    message: "format(): {\(highest)} needs \(highest + 1) value\(highest == 0 ? "" : "s") after the text, found \(given)",
                    offset: offset)
            }
        case .fromJSON:
            if let text = literal(0), JSONValue.parse(text) == nil {
                throw ExpressionError(message: "fromJSON(): '\(text)' is not JSON (write strings in double quotes inside it: '[\"a\", \"b\"]')", offset: offset)
            }
        case .split:
            if literal(1) == "" { throw ExpressionError(message: "split(): the separator is empty; write split(text, ',') or another separator", offset: offset) }
        case .replace:
            if literal(1) == "" { throw ExpressionError(message: "replace(): the text to find is empty", offset: offset) }
        case .join, .contains, .startsWith, .endsWith, .toJSON, .trim:
            return
        }
    }
}
