/// `vars: { NAME: { sh: COMMAND } }` (SPEC §15): the planner made a task
/// `vars.NAME` that every reader needs; its stdout becomes the value.
extension RunEngine {
    /// Before the task's dependents are told it settled: they read the value.
    func setComputedVariable(_ position: Int, from index: Int) {
        var value = nodes[index].stash.stdout
        if value.hasSuffix("\n") { value.removeLast() }
        setVariable(at: position, to: value)
    }
}
