import Dispatch
import FlowrunModel

/// `sleep:`: each attempt a timer on the engine's queue (`SleepAttempt`), no process, no output.
struct SleepExecutor: Executor {
    let queue: DispatchQueue
    let soon: ImmediateWork

    var printsOutput: Bool { false }

    func attempt(_ duration: SleepDuration, output: AttemptOutput?, end: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        SleepAttempt(duration, queue: queue, soon: soon, completion: end)
    }
}
