#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel

/// A variable declared `{ required: true }` (SPEC §15) takes its value from
/// `--var NAME=…`, else from the environment variable `NAME`; without
/// either a run (or its dry run) stops before anything runs, exit 2,
/// naming each missing one and where it is declared.
extension Planner {
    static func checkRequiredVariables(_ workflow: inout Workflow, given: [(name: String, value: String)]) throws(PlanningError) {
        let named = Set(given.map(\.name))
        var missing: [Variable] = []
        for index in workflow.vars.indices where workflow.vars[index].required && !named.contains(workflow.vars[index].name) {
            if let value = getenv(workflow.vars[index].name) {
                workflow.vars[index].value = String(cString: value)
            } else {
                missing.append(workflow.vars[index])
            }
        }
        guard !missing.isEmpty else { return }
        let lines = missing.map { "\($0.location): variable '\($0.name)' is required: pass --var \($0.name)=VALUE, or set \($0.name) in the environment" }
        throw PlanningError(message: lines.joined(separator: "\nflowrun: "))
    }
}
