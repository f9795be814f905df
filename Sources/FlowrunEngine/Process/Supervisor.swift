import CFlowrunSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// flowrun as two processes that watch each other, so that nothing a run
/// started outlives it even when flowrun itself is killed with SIGKILL or by
/// the OOM killer (SPEC §11).
///
/// The first process, the pid the shell knows, is a small C supervisor (it
/// runs no Swift after the split, and allocates only for its last sweep of
/// /proc, once the engine is gone): a child subreaper
/// that passes stop signals on to its child, the engine, and when the engine
/// is gone, however it went, kills every descendant left and exits with the
/// engine's status (128+N when it died of signal N). The engine learns of the
/// supervisor's death from a pipe only the supervisor holds
/// (`RunEngine.watchSupervisor`) and then kills every task at once.
///
/// Why a socket and not PR_SET_PDEATHSIG alone: its end of file cannot be
/// missed, even if the supervisor died before the engine started listening
/// (PDEATHSIG needs a getppid() check after it, and a handler in a signal
/// path the engine already uses for SIGINT/SIGTERM/SIGHUP).
package enum Supervisor {
    /// Splits flowrun into supervisor and engine. Call first thing in `main`,
    /// while the process has a single thread. Returns in the engine (or, if
    /// the split fails, in the one unsupervised process).
    package static func split() {
        precondition(isSingleThreaded(), "the supervisor split forks: it must come before any thread starts")
        _ = flowrun_supervise()
    }

    /// A run's split, put off from `main` until its plan shows whether a
    /// task must start (`splitLater`, then `splitNow` or `runsNoTask`).
    /// Nothing else than main's thread exists until then, so a plain atomic.
    private static let splitPending = Atomic(false)

    /// In `main`, for a command line that may start a task: the split comes
    /// later, but still before any thread (`splitNow`).
    package static func splitLater() {
        splitPending.store(true, ordering: .releasing)
    }

    /// The put-off split, if any: a task may start.
    package static func splitNow() {
        if splitPending.exchange(false, ordering: .acquiringAndReleasing) { split() }
    }

    /// The put-off split is not needed: every task is up to date, so the
    /// run starts no process, and a supervisor would guard nothing.
    package static func runsNoTask() {
        if splitPending.exchange(false, ordering: .acquiringAndReleasing) { promisedNoTask.store(true, ordering: .releasing) }
    }

    /// Set by `runsNoTask`: an attempt starting after it is a bug (the
    /// engine's check disagreed with the one made before the split).
    private static let promisedNoTask = Atomic(false)

    /// Whether this process skipped the split because no task would start.
    package static var skippedAsNoOp: Bool { promisedNoTask.load(ordering: .acquiring) }

    /// Checked as a run's engine starts: a command that put the split off
    /// decided it (a path to a run that forgot would run tasks unguarded).
    package static var isSplitDecided: Bool { !splitPending.load(ordering: .acquiring) }

    /// Whether this process has one thread (`Threads:` of /proc/self/status);
    /// true when that cannot be read.
    static func isSingleThreaded() -> Bool {
        let file = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return true }
        defer { close(file) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
        guard count > 0 else { return true }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }) else { return true }
        return line.dropFirst("Threads:".count).trimmingPrefix(while: { $0 == " " || $0 == "\t" }) == "1"
    }

    /// Whether the supervisor is being watched already in this process.
    private static let watching = Atomic(false)

    /// True once per process: the caller starts the watch (`whenGone`).
    static func startsWatching() -> Bool {
        !watching.load(ordering: .acquiring) && !watching.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// In the engine: calls `gone` (on a thread of its own) once the
    /// supervisor has died, with the signal that killed it (SIGKILL when
    /// it could not say). False when flowrun runs unsupervised.
    @discardableResult
    static func whenGone(_ gone: @escaping @Sendable (Int32) -> Void) -> Bool {
        let box = Unmanaged.passRetained(GoneCallback(gone))
        let started = flowrun_watch_supervisor({ context, signal in
            guard let context else { return }
            Unmanaged<GoneCallback>.fromOpaque(context).takeRetainedValue().call(signal)
        }, box.toOpaque())
        if started != 0 { box.release() }
        return started == 0
    }

    /// In the engine, at the run's end: the sentinel (`whenGone`'s child)
    /// is killed and reaped, and none starts after.
    static func endSentinel() {
        flowrun_supervisor_end_sentinel()
    }

    /// In the engine: hands the supervisor `events.jsonl` (a descriptor it
    /// keeps unread until the engine dies) and the run's start, so that a
    /// killed engine's record still ends with how it ended (`run_killed`).
    static func keepEvents(_ descriptor: Int32, startedAt monotonicSeconds: Double, facts: [UInt8]) {
        guard descriptor >= 0 else { return }
        // Past the supervisor's room (paths of 60 KiB): the line without them.
        let facts = facts.count <= 60 * 1024 ? facts : []
        _ = facts.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { flowrun_supervisor_keep_events(descriptor, monotonicSeconds, $0.baseAddress, $0.count) }
        }
        close(descriptor)  // the message in flight holds its own reference
    }
}

extension Supervisor {
    /// In the engine: `command` (a program's path and its arguments) runs
    /// in the supervisor once the engine is gone, however it went — how a
    /// run's Slurm jobs are cancelled after a `kill -9` of the engine.
    @discardableResult
    static func onEngineDeath(run command: [String]) -> Bool {
        var bytes: [UInt8] = []
        for word in command { bytes += Array(word.utf8) + [0] }
        return bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { flowrun_supervisor_on_death($0.baseAddress, $0.count) == 0 }
        }
    }
}

/// The closure `Supervisor.whenGone` hands through C.
private final class GoneCallback: Sendable {
    let call: @Sendable (Int32) -> Void
    init(_ call: @escaping @Sendable (Int32) -> Void) { self.call = call }
}
