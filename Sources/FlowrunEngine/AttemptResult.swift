import FlowrunEvents

/// How one attempt of a task ended, as its executor reports it once, on
/// the engine's queue: status, exit code, signal, reason, what it used, and
/// what its output left (the stash, `$FLOWRUN_OUTPUT`, whether a log exists).
struct AttemptResult: Sendable {
    /// succeeded, failed, timedOut or cancelled.
    var status: TaskStatus
    var exitCode: Int?
    var signal: Int?
    /// The stash's stdout: the last 1 MiB, `::progress::` lines left out, trailing newline removed.
    var stdout = ""
    /// Set when the whole stdout is longer than the stash's 1 MiB (see `OversizedStdout`).
    var oversizedStdout: OversizedStdout?
    var outputs: [(key: String, value: String)] = []
    /// Why it did not succeed, for people: "exit 3", "timed out after 5s", "HTTP 500 (expected 200)".
    var reason: String?
    /// Whether the attempt wrote to the task's log (which exists only once something was written).
    var wroteLog = false
    /// It could not start for want of descriptors, with no other task
    /// running to free any: the run cannot go on (`DescriptorLimit`).
    var outOfDescriptors = false
    /// The kernel killed it for its cgroup's memory limit (read from the cgroup, never guessed).
    var outOfMemory = false
    /// What it used; nil when it ran no process (sleep, http).
    var usage: ResourceUsage?

    init(status: TaskStatus, exitCode: Int? = nil, signal: Int? = nil, reason: String? = nil) {
        self.status = status
        self.exitCode = exitCode
        self.signal = signal
        self.reason = reason
    }
}
