import Dispatch

/// `run:` on this machine: each attempt a process tree (`ProcessAttempt`),
/// its pipes read by the run's one `OutputPump`, its exit reaped by the
/// run's `ChildReaper`, its teardown steps sent by the `ProcessTreeKiller`.
struct LocalProcessExecutor: Executor {
    let queue: DispatchQueue
    let pump: OutputPump
    let reaper: ChildReaper
    let killer: ProcessTreeKiller
    /// Whether flowrun has children that are not running task shells.
    let escapeesExist: () -> Bool
    /// Whether one more task's descriptors fit under flowrun's limit now.
    let descriptorsFit: () -> Bool
    /// Descriptors ran short: hands the engine a retry for when a task ends.
    let waitForDescriptors: (@escaping () -> Void) -> Bool

    var printsOutput: Bool { true }

    func attempt(_ setup: ProcessAttempt.Setup, output: AttemptOutput?, end: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        guard let output else { preconditionFailure("a local process's attempt needs its output") }
        return ProcessAttempt(
            setup, output: output, queue: queue, pump: pump, reaper: reaper, killer: killer,
            escapeesExist: escapeesExist, descriptorsFit: descriptorsFit, waitForDescriptors: waitForDescriptors,
            completion: end)
    }
}
