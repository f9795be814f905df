import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `ready: {line: REGEX}`: passes once a line of the service's output
/// (stdout or stderr) matches. The pump hands each line over on the event
/// loop's thread (`offer`); it is matched on a queue of the check's own,
/// never on the loop's thread: a pattern that backtracks catastrophically
/// (`^(a+)+$` on a line of forty `a`s and a `!`) would otherwise stall
/// every task's output, the reaper and the run's stop for good — Swift's
/// regex matching cannot be interrupted. Now only this probe waits, and it
/// fails after its `timeout` saying so. The engine's pokes read the flag.
final class LineReadinessCheck: ReadinessCheck, @unchecked Sendable {
    // @unchecked: `regex` is used only on `matcher`; the rest is atomic.
    private let pattern: String
    private let regex: Regex<AnyRegexOutput>?
    private let matched = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)
    /// Bytes of lines handed over and not yet matched; past `backlogLimit` lines are let go.
    private let backlog = Atomic<Int>(0)
    /// CLOCK_MONOTONIC nanoseconds when the match in progress began (0: none).
    private let matchingSince = Atomic<UInt64>(0)
    private let matcher = DispatchQueue(label: "flowrun.ready-line")
    static let backlogLimit = 8 << 20

    init(pattern: String) {
        self.pattern = pattern
        regex = try? Regex(pattern)  // checked when the file was read
    }

    /// On the loop's thread: queues `line` to be matched; `onMatch` runs
    /// (on the check's queue) for the first line that matches.
    func offer(_ line: String, onMatch: @escaping () -> Void) {
        guard regex != nil, !matched.load(ordering: .relaxed), !ended.load(ordering: .relaxed) else { return }
        let size = line.utf8.count + 1
        guard backlog.add(size, ordering: .relaxed).newValue <= Self.backlogLimit else {
            backlog.subtract(size, ordering: .relaxed)
            return
        }
        let onMatch = MatchHandler(run: onMatch)
        matcher.async { [self] in
            defer { backlog.subtract(size, ordering: .relaxed) }
            guard let regex, !matched.load(ordering: .relaxed), !ended.load(ordering: .relaxed) else { return }
            matchingSince.store(Self.now(), ordering: .relaxed)
            let found = line.contains(regex)
            matchingSince.store(0, ordering: .relaxed)
            if found, matched.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged { onMatch.run() }
        }
    }

    func poke(_ report: @escaping (String?) -> Void) {
        guard !matched.load(ordering: .acquiring) else { return report(nil) }
        let since = matchingSince.load(ordering: .relaxed)
        let stuck = since > 0 && Self.now() > since + 1_000_000_000
        report("no line of its output matched /\(pattern)/" + (stuck ? " (matching one line has taken over a second: the pattern backtracks catastrophically on it)" : ""))
    }

    func cancel() {
        ended.store(true, ordering: .relaxed)
    }

    /// What the engine gave to run on a match: it hops to the engine's queue at once.
    private struct MatchHandler: @unchecked Sendable { let run: () -> Void }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

/// `ready: {run: CMD}`: passes when the command exits 0. It runs as a
/// task's process does (its own tree, reaped by the engine, stopped
/// TERM → grace → KILL if the probe ends while it runs); one at a time.
final class CommandReadinessCheck: ReadinessCheck {
    private let command: String
    private let start: (@escaping (AttemptResult) -> Void) -> any TaskAttempt
    private var running: (any TaskAttempt)?
    /// How a run still going when the probe ends is stopped (the engine's `teardown`).
    private let teardown: [TeardownStep]

    /// `start` makes (and starts) one run of the command, reporting on the engine's queue.
    init(command: String, teardown: [TeardownStep], start: @escaping (@escaping (AttemptResult) -> Void) -> any TaskAttempt) {
        self.command = command
        self.teardown = teardown
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
        running?.cancel(as: .cancelled, reason: "the probe ended", through: teardown)
        running = nil
    }
}
