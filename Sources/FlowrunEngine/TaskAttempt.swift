import FlowrunEvents

/// One attempt of a task in flight, as an `Executor` made it. `start` and
/// `cancel` are called on the engine's queue (each attempt checks it with
/// `dispatchPrecondition`); the attempt reports its end exactly once
/// through the completion it was given, on that queue, never inside `start`.
protocol TaskAttempt: AnyObject {
    func start()
    /// Stop early through `steps` (`TeardownStep.graceful` for a timeout or
    /// a cancel, `.immediate` for a second Ctrl-C). The attempt still
    /// reports, with the status and reason of the first cancel; a later
    /// cancel that begins with `.kill` ends a grace in progress, any other
    /// joins the teardown already under way.
    func cancel(as status: TaskStatus, reason: String, through steps: [TeardownStep])
}
