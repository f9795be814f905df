import Dispatch

/// How an attempt of a task runs: on this machine (`LocalProcessExecutor`),
/// as an HTTP request (`HTTPExecutor`), as a timer (`SleepExecutor`) or as a
/// Slurm job (`SlurmExecutor`). The engine decides what and when: it
/// renders the work (the script and its environment, the request, the
/// job), picks the executor in one place (`RunEngine.makeAttempt`: the
/// task's `executor:`, `http:`, `sleep:`) and gives the teardown steps of a
/// cancel (`TeardownStep`); an executor only runs the work and reports.
///
/// An executor reports on two channels: output chunks, handed to the
/// attempt's `AttemptOutput` (the engine's one sink for the log, the stash
/// and `::progress::`), and the end, once, as an `AttemptResult` on the
/// engine's queue (status, exit code, signal, reason, resources used).
protocol Executor {
    /// What one attempt runs, as the engine rendered it.
    associatedtype Work
    /// Whether its attempts print: the engine then gives each an
    /// `AttemptOutput`. False for `sleep:` (prints nothing) and `http:`
    /// (its body is not a process's stdout; `HTTPAttempt` keeps its writer).
    var printsOutput: Bool { get }
    /// An attempt of `work`, not started yet. `output` is nil exactly when
    /// `printsOutput` is false; `end` is called once, on the engine's queue.
    func attempt(_ work: Work, output: AttemptOutput?, end: @escaping (AttemptResult) -> Void) -> any TaskAttempt
}
