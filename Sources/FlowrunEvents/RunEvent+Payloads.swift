/// What each kind of event carries (docs/events-json.md names the JSON fields).
extension RunEvent {
    /// A task's log: where it is, and where in that path the part inside the
    /// run record starts (`logs/000/000042-NAME.log`, after the record's
    /// folder and its slash), which is what the JSON line says. A count, not
    /// a second string, made for every task.
    package struct LogPath: Sendable, Equatable {
        package var path: String
        package var offsetInRecord: Int

        package init(path: String, offsetInRecord: Int) {
            self.path = path
            self.offsetInRecord = offsetInRecord
        }
    }

    package struct RunStarted: Sendable {
        package var runID: String
        package var workflow: String
        /// The run folder.
        package var path: String
        /// The run's slots (`max_parallel`): what a task holds when its task_started has no `limits`.
        package var maxParallel: Int
        /// The tasks known at the start, fan-out members whose items are known included.
        package var members: Int
        /// The run's deadline.
        package var timeoutSeconds: Double?
        /// The run this one resumes.
        package var resumedFrom: String?
        /// Groups whose fan-out's items are known only once it starts (not counted in `members`).
        package var sizedAtRunTime: [String]?
        /// `flowrun watch`: the file whose change started this run (nil for the first run).
        package var trigger: String?

        package init(
            runID: String, workflow: String, path: String, maxParallel: Int, members: Int, timeoutSeconds: Double? = nil,
            resumedFrom: String? = nil, sizedAtRunTime: [String]? = nil
        ) {
            self.runID = runID
            self.workflow = workflow
            self.path = path
            self.maxParallel = maxParallel
            self.members = members
            self.timeoutSeconds = timeoutSeconds
            self.resumedFrom = resumedFrom
            self.sizedAtRunTime = sizedAtRunTime
        }
    }

    package struct TaskWaiting: Sendable {
        package var task: String
        /// What it waits on: `["db 1/1"]`.
        package var waitingOn: [String]

        package init(task: String, waitingOn: [String]) {
            self.task = task
            self.waitingOn = waitingOn
        }
    }

    package struct TaskStarted: Sendable {
        package var task: String
        package var attempt: Int
        /// The attempt's deadline and its group's, in seconds, as the engine started them (nil: none).
        package var timeoutSeconds: Double?
        package var groupTimeoutSeconds: Double?
        /// The slots the task holds, a JSON object shaped like a plan step's
        /// `limits` (`{"run":4,"group":{…},"semaphores":[…]}`); nil when it
        /// holds one of the run's slots and nothing else (the common case,
        /// left out of the line), `{}` when it holds none.
        package var limits: String?
        /// First attempt: what it waited for (its needs, and its group's), by
        /// name; nil when none. Timelines draw these as arrows.
        package var needs: [String]?
        /// Where its log goes (made at its first byte); nil for a `sleep:`.
        package var log: LogPath?
        /// A service: what its `ready:` probe checks (`tcp 127.0.0.1:8000`), `none` without one; nil for a task.
        package var probe: String?

        package init(
            task: String, attempt: Int, timeoutSeconds: Double? = nil, groupTimeoutSeconds: Double? = nil, limits: String? = nil,
            needs: [String]? = nil, log: LogPath? = nil
        ) {
            self.task = task
            self.attempt = attempt
            self.timeoutSeconds = timeoutSeconds
            self.groupTimeoutSeconds = groupTimeoutSeconds
            self.limits = limits
            self.needs = needs
            self.log = log
        }
    }

    /// A service's probe passed: its dependents start; it keeps running (SPEC §14).
    package struct TaskReady: Sendable {
        package var task: String
        /// Seconds from its start.
        package var after: Double
        package var probe: String?

        package init(task: String, after: Double, probe: String?) {
            self.task = task
            self.after = after
            self.probe = probe
        }
    }

    package struct TaskProgress: Sendable {
        package var task: String
        package var percent: Int

        package init(task: String, percent: Int) {
            self.task = task
            self.percent = percent
        }
    }

    /// A task on Slurm: its job queued or running (SPEC §12), for the live view.
    package struct TaskSlurm: Sendable {
        package var task: String
        /// `1234` or `1234_5` (an array element).
        package var jobID: String
        /// `PENDING` or `RUNNING`.
        package var state: String
        package var node: String?
        /// `queued (slurm job 1234)`, `running on n1 (slurm job 1234)`.
        package var text: String

        package init(task: String, jobID: String, state: String, node: String?, text: String) {
            self.task = task
            self.jobID = jobID
            self.state = state
            self.node = node
            self.text = text
        }
    }

    package struct TaskOutput: Sendable {
        package enum Stream: String, Sendable {
            case stdout, stderr
        }

        package var task: String
        package var stream: Stream
        /// The line, without its line break.
        package var line: String

        package init(task: String, stream: Stream, line: String) {
            self.task = task
            self.stream = stream
            self.line = line
        }
    }

    package struct TaskRetrying: Sendable {
        package var task: String
        /// How the attempt that failed ended.
        package var status: TaskStatus
        package var reason: String?
        package var exitCode: Int?
        package var signal: Int?
        /// The next attempt's number.
        package var attempt: Int
        /// Seconds until it starts.
        package var delay: Double
        /// The next attempt's memory when `retry_resources` grew it (after an out-of-memory death).
        package var memoryBytes: UInt64?

        package init(task: String, status: TaskStatus, reason: String? = nil, exitCode: Int? = nil, signal: Int? = nil, attempt: Int, delay: Double) {
            self.task = task
            self.status = status
            self.reason = reason
            self.exitCode = exitCode
            self.signal = signal
            self.attempt = attempt
            self.delay = delay
        }
    }

    package struct TaskFinished: Sendable {
        package var task: String
        package var status: TaskStatus
        /// Attempts made: 0 when it never ran (skipped, cancelled before it started, reused).
        package var attempt: Int
        package var exitCode: Int?
        package var signal: Int?
        package var duration: Double?
        package var reason: String?
        /// Nil when it wrote no log.
        package var log: LogPath?
        /// A failure's last lines of its log.
        package var logTail: [String]?
        /// A failure that `continue_on_error` allows.
        package var allowed: Bool
        /// A member a join cancelled: that join.
        package var cancelledBy: String?
        /// How it succeeded without running.
        package var reused: ReuseKind?
        /// What its last attempt used (peak memory, CPU time); nil when it ran no process.
        package var usage: ResourceUsage?
        /// Set by the run record when this one line stands for the attempt's
        /// `task_started` too (an attempt shorter than a moment): that start.
        /// Behind a reference: nearly every event has none.
        package var start: MergedStart?

        package init(
            task: String, status: TaskStatus, attempt: Int, exitCode: Int? = nil, signal: Int? = nil, duration: Double? = nil,
            reason: String? = nil, log: LogPath? = nil, logTail: [String]? = nil, allowed: Bool = false, cancelledBy: String? = nil,
            reused: ReuseKind? = nil
        ) {
            self.task = task
            self.status = status
            self.attempt = attempt
            self.exitCode = exitCode
            self.signal = signal
            self.duration = duration
            self.reason = reason
            self.log = log
            self.logTail = logTail
            self.allowed = allowed
            self.cancelledBy = cancelledBy
            self.reused = reused
        }
    }

    /// A `task_started` folded into its `task_finished` (immutable, so sharable).
    package final class MergedStart: Sendable {
        /// When the attempt started, in seconds since the run started.
        package let elapsed: Double
        package let started: TaskStarted

        package init(elapsed: Double, _ started: TaskStarted) {
            self.elapsed = elapsed
            self.started = started
        }
    }

    package struct GroupFinished: Sendable {
        package var group: String
        package var status: TaskStatus
        /// Its members, static members of a fan-out included.
        package var members: Int
        package var succeeded: Int
        package var duration: Double?
        package var reason: String?

        package init(group: String, status: TaskStatus, members: Int, succeeded: Int, duration: Double? = nil, reason: String? = nil) {
            self.group = group
            self.status = status
            self.members = members
            self.succeeded = succeeded
            self.duration = duration
            self.reason = reason
        }
    }

    package struct JoinCompleted: Sendable {
        package var join: String
        package var status: TaskStatus
        package var members: Int
        package var succeeded: Int
        package var required: Int
        package var timedOut: Bool
        package var duration: Double
        /// Members not final when it completed.
        package var missing: [String]
        /// What it reports, in order: name → value (whole, not shortened).
        package var report: [(key: String, value: String)]
        /// The members one by one with their stash (SPEC §5).
        package var joinReport: JoinReport?

        package init(
            join: String, status: TaskStatus, members: Int, succeeded: Int, required: Int, timedOut: Bool, duration: Double,
            missing: [String], report: [(key: String, value: String)] = [], joinReport: JoinReport? = nil
        ) {
            self.join = join
            self.status = status
            self.members = members
            self.succeeded = succeeded
            self.required = required
            self.timedOut = timedOut
            self.duration = duration
            self.missing = missing
            self.report = report
            self.joinReport = joinReport
        }
    }

    package struct RunFinished: Sendable {
        package var runID: String
        package var duration: Double
        package var counts: [(status: TaskStatus, count: Int)]
        /// The run's exit code.
        package var exitCode: Int
        /// The run folder.
        package var path: String

        package init(runID: String, duration: Double, counts: [(status: TaskStatus, count: Int)], exitCode: Int, path: String) {
            self.runID = runID
            self.duration = duration
            self.counts = counts
            self.exitCode = exitCode
            self.path = path
        }
    }
}
