import FlowrunYAML
import FlowrunModel

/// `vars: { version: { required: true } }` (SPEC §15, go-task's
/// `requires: { vars: [version] }`): a variable with no value in the file,
/// that a run must be given (`Planner.checkRequiredVariables`).
extension WorkflowDecoder {
    static let variableKeys = ["required"]

    mutating func requiredVariable(_ name: String, _ pair: YAMLNode.Pair) -> Variable? {
        guard let fields = fields(of: pair.value, what: "vars.\(name)", allowed: Self.variableKeys) else { return nil }
        guard let node = fields["required"]?.value, let required = bool(node, what: "required") else {
            error("vars.\(name) written as a mapping takes 'required: true' (a value the run must be given), or write its value itself", at: pair.value)
            return nil
        }
        var variable = Variable(name: name, value: "", location: location(pair.key))
        variable.required = required
        return variable
    }
}
