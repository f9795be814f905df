import FlowrunModel

/// What the dry run says of a step that runs on Slurm.
extension Plan {
    /// The `sbatch` arguments a task or fan-out step's jobs get (a fan-out's
    /// with its `--array`), or nil when it runs locally.
    static func sbatchArguments(_ step: PlanStep, workflow: Workflow) -> [String]? {
        guard step.kind == .task || step.kind == .fanOut, let task = step.task, workflow.executor(of: task) == .slurm else { return nil }
        var arguments = ["--parsable"]
        arguments += SlurmArguments.of(task, settings: workflow.slurm, timeout: step.timers.timeout)
        if step.kind == .fanOut {
            let count = step.fanOutItems?.count ?? step.fanOutCount
            let concurrency = step.limits?.group?.concurrency
            arguments.append(count.map { SlurmArguments.array(count: $0, concurrency: concurrency) }
                ?? "--array=0-N" + (concurrency.map { "%\($0)" } ?? "") + " (N known at run time)")
        }
        return arguments
    }
}
