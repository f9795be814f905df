package import FlowrunModel
import FlowrunValues

/// Fan-outs over `vars` (SPEC §4): their items are known before the run.
extension Planner {
    /// Turns each `foreach:` that reads only `vars` (after `--var`) into the
    /// list it gives, by the rules a run reads a computed value with
    /// (`FanOutText`, `split:`): the plan counts its members, `--dry-run`
    /// lists them, and a member can be named as a target. A value whose
    /// items are records is kept for the run when the task has no `name:`:
    /// a record read at run time is named `GROUP[INDEX]`, one known before
    /// the run by its fields, and a member keeps the name it always had.
    package static func sizeFanOutsKnownAtPlanning(_ workflow: inout Workflow) {
        var values: [OperandPath: ExpressionValue]?
        for index in workflow.groups.indices {
            guard let fanOut = workflow.groups[index].fanOut, case .expression(let template) = fanOut.source,
                  template.operands.allSatisfy({ if case .variable(let name) = $0.path { !workflow.vars.contains { $0.name == name && $0.command != nil } } else { false } })
            else { continue }  // a computed var (sh:) is known only once its task ran
            if values == nil {
                var known: [OperandPath: ExpressionValue] = [:]
                for variable in workflow.vars { known[.variable(variable.name)] = .string(variable.value) }
                values = known
            }
            // A value that cannot be made (a NUL byte, over the size limit) fails the group at run time, as before.
            guard let text = try? TemplateRenderer.render(template, mode: .text, in: ExpressionValues(values!)) else { continue }
            if let split = fanOut.split {
                workflow.groups[index].fanOut!.source = .list(split.items(text))
                continue
            }
            let items = FanOutText.items(text)
            let texts = items.compactMap { item -> String? in if case .text(let text) = item { text } else { nil } }
            if texts.count == items.count {
                workflow.groups[index].fanOut!.source = .list(texts)
            } else if fanOut.template.nameTemplate != nil || !items.contains(where: { if case .record = $0 { true } else { false } }) {
                workflow.groups[index].fanOut!.source = .records(items)
            }
        }
    }
}
