#if canImport(Glibc)
import Glibc
#endif

/// Something that happened during a run. The engine emits these; reporters
/// (plain, json, tty) and the run record's `events.jsonl` consume the same
/// stream, so every output mode carries the same events.
///
/// When an event happened is common to every kind; what it carries is its
/// payload's, one type per kind, so a kind's fields are said by its type
/// (a `task_progress` has a percentage, and nothing else can).
package struct RunEvent: Sendable {
    package enum Kind: String, Sendable, CaseIterable {
        case runStarted = "run_started"
        case taskWaiting = "task_waiting"
        case taskStarted = "task_started"
        case taskProgress = "task_progress"
        /// A service's `ready:` probe passed (it keeps running).
        case taskReady = "task_ready"
        case taskSlurm = "task_slurm"
        /// With `--stream` and `--output json` only (not in events.jsonl): a line a task printed.
        case taskOutput = "task_output"
        case taskRetrying = "task_retrying"
        case taskFinished = "task_finished"
        case groupFinished = "group_finished"
        case joinCompleted = "join_completed"
        case runFinished = "run_finished"
    }

    /// What happened, with what that kind of event carries.
    package enum Payload: Sendable {
        case runStarted(RunStarted)
        case taskWaiting(TaskWaiting)
        case taskStarted(TaskStarted)
        case taskProgress(TaskProgress)
        case taskReady(TaskReady)
        case taskSlurm(TaskSlurm)
        case taskOutput(TaskOutput)
        case taskRetrying(TaskRetrying)
        case taskFinished(TaskFinished)
        case groupFinished(GroupFinished)
        case joinCompleted(JoinCompleted)
        case runFinished(RunFinished)
    }

    /// Seconds since the run started.
    package var elapsed: Double
    /// Wall-clock time, seconds since the epoch.
    package var timestamp: Double
    package var payload: Payload

    /// An event whose wall-clock time the caller knows: the engine gives
    /// the run's start plus `elapsed`, as a reader of `events.jsonl` computes it.
    package init(elapsed: Double, timestamp: Double, _ payload: Payload) {
        self.elapsed = elapsed
        self.timestamp = timestamp
        self.payload = payload
    }

    /// An event stamped with the wall-clock time now.
    package init(elapsed: Double, _ payload: Payload) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        self.init(elapsed: elapsed, timestamp: Double(now.tv_sec) + Double(now.tv_nsec) / 1e9, payload)
    }

    package var kind: Kind {
        switch payload {
        case .runStarted: .runStarted
        case .taskWaiting: .taskWaiting
        case .taskStarted: .taskStarted
        case .taskProgress: .taskProgress
        case .taskReady: .taskReady
        case .taskSlurm: .taskSlurm
        case .taskOutput: .taskOutput
        case .taskRetrying: .taskRetrying
        case .taskFinished: .taskFinished
        case .groupFinished: .groupFinished
        case .joinCompleted: .joinCompleted
        case .runFinished: .runFinished
        }
    }

    /// The task, group or join the event is about (nil for run events).
    package var subject: String? {
        switch payload {
        case .runStarted, .runFinished: nil
        case .taskWaiting(let event): event.task
        case .taskStarted(let event): event.task
        case .taskProgress(let event): event.task
        case .taskReady(let event): event.task
        case .taskSlurm(let event): event.task
        case .taskOutput(let event): event.task
        case .taskRetrying(let event): event.task
        case .taskFinished(let event): event.task
        case .groupFinished(let event): event.group
        case .joinCompleted(let event): event.join
        }
    }
}
