import FlowrunYAML
import FlowrunModel

/// `vars:` written as a mapping, one key: `{ required: true }` (SPEC §15,
/// go-task's `requires: { vars: [version] }`), a variable with no value in
/// the file that a run must be given (`Planner.checkRequiredVariables`); or
/// `{ sh: COMMAND }`, a value computed once per run by a task of its own.
extension WorkflowDecoder {
    static let variableKeys = ["sh", "required"]

    mutating func mappedVariable(_ name: String, _ pair: YAMLNode.Pair) -> Variable? {
        guard let fields = pair.value.mapping else { return nil }
        let keys = fields.map { $0.key.scalar?.text ?? "" }
        if let unknown = fields.first(where: { !Self.variableKeys.contains($0.key.scalar?.text ?? "") }) {
            let key = unknown.key.scalar?.text ?? ""
            error("a computed vars.\(name) is {sh: COMMAND}, found '\(key)'\(Suggestion.hint(for: key, in: Self.variableKeys)); a required one is {required: true}", at: unknown.key)
            return nil
        }
        guard keys.count == 1 else {
            error(keys.isEmpty
                      ? "vars.\(name) written as a mapping is {sh: COMMAND} or {required: true}, found an empty mapping"
                      : "vars.\(name) is either computed, {sh: COMMAND}, or required, {required: true}, not both", at: fields.first?.key ?? pair.value)
            return nil
        }
        var variable = Variable(name: name, value: "", location: location(pair.key))
        if keys[0] == "sh" {
            // {sh: COMMAND}: computed once per run, by a task of its own.
            guard let command = fields[0].value.scalar, !command.isNull, !command.text.trimmingWhitespace.isEmpty else {
                error("a computed vars.\(name) is {sh: COMMAND}, found \(fields[0].value.scalar.map { $0.isNull ? "no command" : "an empty command" } ?? fields[0].value.kindDescription)", at: fields[0].value)
                return nil
            }
            variable.command = command.text
        } else {
            guard let required = bool(fields[0].value, what: "required") else { return nil }
            variable.required = required
        }
        return variable
    }
}
