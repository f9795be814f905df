/// Where a task, group or join stands (SPEC §2, §4, §5).
package enum TaskStatus: String, Sendable, Codable, CaseIterable {
    // Live.
    case pending, waiting, running
    // Final.
    case succeeded, failed
    case timedOut = "timed_out"
    case cancelled, skipped

    package var isFinal: Bool {
        switch self {
        case .pending, .waiting, .running: return false
        default: return true
        }
    }

    /// Failed or timed out: what `when: failure` and the exit code look at.
    package var isFailure: Bool { self == .failed || self == .timedOut }
}

/// Why something was cancelled: decides whether it fails the run.
package enum CancelReason: String, Sendable, Codable {
    /// A join met its quorum or passed its deadline with `on_timeout: continue`: not a failure.
    case joinSettled = "join_settled"
    /// The group's deadline passed.
    case groupTimeout = "group_timeout"
    /// `fail_fast` after another task failed.
    case failFast = "fail_fast"
    /// The run's `timeout` fired.
    case runTimeout = "run_timeout"
    /// A signal (Ctrl-C, SIGTERM, SIGHUP) stopped the run.
    case signal
    /// A task found no file descriptor left, with none running to free one.
    case descriptors
    /// A service it needed exited on its own (SPEC §14).
    case serviceExited = "service_exited"
    /// `flowrun watch`: a file in its sources changed while it ran; the next run starts it again.
    case sourcesChanged = "sources_changed"
    /// `flowrun watch` could not set up or keep its watches (a kernel limit): it stops.
    case watchFailed = "watch_failed"
}
