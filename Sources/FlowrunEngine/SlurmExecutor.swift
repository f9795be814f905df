import Dispatch

/// `executor: slurm`: each attempt one job, or one element of a job array,
/// that the run's `SlurmSession` submits, polls and cancels (`SlurmAttempt`).
/// Teardown steps become `scancel --signal=NAME`, then `scancel`.
struct SlurmExecutor: Executor {
    /// A job as the engine rendered it.
    struct Job {
        var spec: SlurmTaskSpec
        /// The task's name, for messages and the live view.
        var task: String
        /// Members of one fan-out share a key: submitted together as one array.
        var batchKey: Int?
        var sbatchArguments: [String]
        /// `%C` of the array, from the group's concurrency.
        var concurrency: Int?
        /// Told of `queued (slurm job N)` and `running on NODE`.
        var onState: (SlurmAttempt, SlurmJobState) -> Void
    }

    let session: SlurmSession
    let queue: DispatchQueue

    var printsOutput: Bool { true }

    func attempt(_ job: Job, output: AttemptOutput?, end: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        guard let output else { preconditionFailure("a Slurm job's attempt needs its output") }
        return SlurmAttempt(
            spec: job.spec, task: job.task, batchKey: job.batchKey, sbatchArguments: job.sbatchArguments,
            concurrency: job.concurrency, output: output, session: session, queue: queue,
            onState: job.onState, completion: end)
    }
}
