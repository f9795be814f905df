import FlowrunModel

/// `vars: { version: { sh: "git describe --tags" } }` (SPEC §15): a task of
/// its own, `vars.version`, runs the command once per run, before every
/// task that reads the value; its stdout (a trailing newline trimmed)
/// becomes the value. Done with a task and needs, so the record, `--dry-run`,
/// `resume` and a failure ("a need did not succeed") are those of any task.
extension Planner {
    /// The task that computes `variable`.
    package static func computingTaskName(of variable: String) -> String { "vars." + variable }

    static func addComputedVariableTasks(_ workflow: inout Workflow) throws(PlanningError) {
        let computed = workflow.vars.filter { $0.command != nil }
        guard !computed.isEmpty else { return }
        for variable in computed {
            let name = computingTaskName(of: variable.name)
            if workflow.tasks.contains(where: { $0.name == name }) || workflow.groups.contains(where: { $0.name == name }) {
                throw PlanningError(message: "\(variable.location.line):\(variable.location.column): vars.\(variable.name) is computed by a task named '\(name)', which the workflow already has; rename that task")
            }
        }
        // Compared in turn, not hashed: a file computes a few vars, and each
        // operand of each task is checked (hashing was a fifth of this).
        let names = computed.map(\.name)
        /// The computing tasks a definition's templates or `if:` read. Read
        /// for every task of the file, walking each parsed expression without
        /// making an array of its operands (a tenth of the extra planning a
        /// computed var read by 2,000 tasks cost went to those).
        func needs(of task: TaskDefinition) -> [Reference] {
            var read: [String] = []
            func note(_ expression: Expression) {
                switch expression {
                case .string, .number, .boolean: return
                case .operand(let operand):
                    if case .variable(let name) = operand.path, names.contains(name), !read.contains(name) { read.append(name) }
                case .not(let inner): note(inner)
                case .binary(_, let left, let right):
                    note(left)
                    note(right)
                case .call(_, let arguments):
                    for argument in arguments { note(argument) }
                }
            }
            for template in task.templates {
                for segment in template.segments { if case .expression(let expression, _) = segment { note(expression) } }
            }
            if let condition = task.condition { note(condition.value) }
            return read.map { Reference(computingTaskName(of: $0), at: task.location) }
        }
        for index in workflow.tasks.indices {
            let added = needs(of: workflow.tasks[index])
            if !added.isEmpty { workflow.tasks[index].needs += added }
        }
        for group in workflow.groups.indices {
            for member in workflow.groups[group].members.indices {
                workflow.groups[group].members[member].needs += needs(of: workflow.groups[group].members[member])
            }
            if let template = workflow.groups[group].fanOut?.template {
                // The fan-out waits as its group: a group's needs are every member's.
                workflow.groups[group].needs += needs(of: template)
            }
            // The group's own `if:` is read before any member starts.
            let conditionOperands = workflow.groups[group].condition?.value.operands ?? []
            if case .expression(let template)? = workflow.groups[group].fanOut?.source {
                for operand in template.operands {
                    guard case .variable(let name) = operand.path, names.contains(name) else { continue }
                    workflow.groups[group].needs.append(Reference(computingTaskName(of: name), at: workflow.groups[group].location))
                }
            }
            for operand in conditionOperands {
                guard case .variable(let name) = operand.path, names.contains(name),
                      !workflow.groups[group].needs.contains(where: { $0.value == computingTaskName(of: name) }) else { continue }
                workflow.groups[group].needs.append(Reference(computingTaskName(of: name), at: workflow.groups[group].location))
            }
        }
        for variable in computed {
            let script = Template(source: variable.command!, segments: [.text(variable.command!)], location: variable.location)
            var task = TaskDefinition(name: computingTaskName(of: variable.name), location: variable.location, action: .run(script))
            task.description = "computes vars.\(variable.name)"
            workflow.tasks.append(task)
        }
    }
}
