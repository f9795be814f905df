extension WorkflowChecker {
    /// A secret that a task's own `env:` sets gets its value only when the
    /// task starts, after the masker was made: that value is not masked.
    /// Said, not refused: the name may also hide the caller's value.
    mutating func checkSecrets() {
        guard !workflow.secrets.isEmpty else { return }
        let atStart = Set(workflow.vars.map(\.name) + workflow.env.map(\.name))
        let names = Set(workflow.secrets.map(\.value)).subtracting(atStart)
        guard !names.isEmpty else { return }
        let templates = workflow.groups.compactMap { $0.fanOut?.template }
        for task in workflow.mainTasks + workflow.finally + templates {
            for entry in task.env where names.contains(entry.name) {
                diagnostics.append(.warning(
                    "'\(entry.name)' is a secret, but this value is set when the task starts and is not masked; "
                        + "set it under the workflow's env: or vars: to have it masked", at: entry.location))
            }
        }
    }
}
