/// Where events go. Called on the engine's serial queue, one event at a time.
package protocol RunReporter: AnyObject, Sendable {
    func report(_ event: RunEvent)
    /// Called once after `run_finished`, to flush.
    func finish()
    /// With `--stream` (and, for the live view's rows, on a terminal): one
    /// whole line a task printed on stdout or (`isError`) stderr, as it
    /// arrives. Called where the task's output is read: the output thread
    /// for a local task, the engine's queue for a Slurm job's (at each poll).
    func output(task: String, line: String, isError: Bool)
}

extension RunReporter {
    package func output(task: String, line: String, isError: Bool) {}
}
