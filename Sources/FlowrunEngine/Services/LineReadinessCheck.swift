import Synchronization

/// `ready: {line: REGEX}`: passes once a line of the service's output
/// (stdout or stderr) matches. Lines are matched on the event loop's thread
/// as the pump reads them (`matches`); the engine's pokes read the flag.
final class LineReadinessCheck: ReadinessCheck, @unchecked Sendable {
    // @unchecked: `regex` is used only on the loop's thread (the pump's reader); `matched` is atomic.
    private let pattern: String
    private let regex: Regex<AnyRegexOutput>?
    private let matched = Atomic<Bool>(false)

    init(pattern: String) {
        self.pattern = pattern
        regex = try? Regex(pattern)  // checked when the file was read
    }

    /// On the loop's thread: whether `line` is the first to match.
    func matches(_ line: String) -> Bool {
        guard !matched.load(ordering: .relaxed), let regex, line.contains(regex) else { return false }
        matched.store(true, ordering: .releasing)
        return true
    }

    func poke(_ report: @escaping (String?) -> Void) {
        report(matched.load(ordering: .acquiring) ? nil : "no line of its output matched /\(pattern)/")
    }

    func cancel() {}
}

/// `ready: {run: CMD}`: passes when the command exits 0. It runs as a
/// task's process does (its own tree, reaped by the engine, stopped
/// TERM → grace → KILL if the probe ends while it runs); one at a time.
final class CommandReadinessCheck: ReadinessCheck {
    private let command: String
    private let start: (@escaping (AttemptResult) -> Void) -> any TaskAttempt
    private var running: (any TaskAttempt)?

    /// `start` makes (and starts) one run of the command, reporting on the engine's queue.
    init(command: String, start: @escaping (@escaping (AttemptResult) -> Void) -> any TaskAttempt) {
        self.command = command
        self.start = start
    }

    func poke(_ report: @escaping (String?) -> Void) {
        guard running == nil else { return }
        running = start { [weak self] result in
            guard let self else { return }
            self.running = nil
            report(result.status == .succeeded ? nil : "'\(self.command)': \(result.reason ?? "failed")")
        }
    }

    func cancel() {
        running?.stop(as: .cancelled, reason: "the probe ended")
        running = nil
    }
}
