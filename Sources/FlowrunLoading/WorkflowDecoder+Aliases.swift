import FlowrunYAML
import FlowrunModel

/// `aliases: [b]` on a task, a group or a template call (SPEC §15): more
/// names a run can be asked to run it by. Clashes are checked once the whole
/// file is read (`WorkflowChecker.checkAliases`).
extension WorkflowDecoder {
    mutating func aliases(_ node: YAMLNode) -> [Reference] {
        references(node, what: "aliases").filter { alias in
            guard Self.isValidName(alias.value) else {
                error("'\(alias.value)' is not a valid alias: use letters, digits, '_', '.' and '-', not starting with '.' or '-'", at: alias.location)
                return false
            }
            return true
        }
    }
}
