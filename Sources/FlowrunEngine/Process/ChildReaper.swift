import CFlowrunSystem
import Dispatch
import Glibc
import Synchronization
import FlowrunEvents

/// Reaps child processes without a thread per child and routes each exit to
/// the completion registered for its pid. Create exactly one, early, before
/// any child is started, and keep it for the life of the process.
///
/// How: the run's event loop hears SIGCHLD (`ChildExitWatch`: a signalfd,
/// plus a handler for a SIGCHLD that a thread not blocking it takes) and
/// calls `reapPass(runningInline:into:)`, which calls `waitpid(-1, WNOHANG)`
/// until nothing more is ready, so coalesced SIGCHLDs lose nothing, and
/// delivers exits with no thread hand-off. `init` blocks SIGCHLD in the
/// calling thread: create the reaper on the main thread before starting
/// other threads, and they inherit the block; children do not
/// (`ProcessLauncher` gives them an empty mask).
///
/// The process becomes a child subreaper, so orphaned descendants re-parent
/// to it and are reaped and reported to `orphanHandler`.
///
/// What must hold: SIGCHLD is never SIG_IGN (the kernel would then reap
/// children itself and `waitpid` would fail with ECHILD) and nothing else
/// replaces its disposition; nothing else in the process waits for
/// children (a test runs it in an exit test's process of its own).
final class ChildReaper: Sendable {
    /// What a registered child's exit is reported to.
    private struct Registration {
        var queue: DispatchQueue
        var completion: @Sendable (ProcessExit, ResourceUsage) -> Void
    }

    /// The registry. Owned by `state`'s mutex: `launch` runs on any thread,
    /// reap passes on the event loop's.
    private struct State {
        var registrations: [Int32: Registration] = [:]
        /// Statuses reaped before their pid was registered: `waitpid(-1)`
        /// can win the race against the spawning thread.
        var unclaimed: [Int32: (status: Int32, usage: ResourceUsage)] = [:]
        /// Spawns between "about to spawn" and "registered". While > 0 an
        /// unknown pid may be one of ours; once 0, unclaimed pids are orphans.
        var spawnsInFlight = 0
    }

    private let state = Mutex(State())
    /// Set before the first spawn: until then no process of the run exists to sweep.
    private let launchedAny = Atomic(false)

    /// Whether a child was ever started through this reaper (or is being started).
    var hasLaunched: Bool { launchedAny.load(ordering: .acquiring) }

    /// Whether this process has a child, running or a zombie. Once a reaper
    /// exists the process is a child subreaper, so none means no descendant.
    static var hasAnyChild: Bool { flowrun_has_children() != 0 }
    private let orphanHandler: (@Sendable (Int32, ProcessExit) -> Void)?
    private let orphanQueue: DispatchQueue

    /// Makes this process a child subreaper and blocks SIGCHLD in the calling
    /// thread. `orphanHandler` (on `orphanQueue`) hears of every reaped
    /// process that was not launched through this reaper.
    init(
        orphanQueue: DispatchQueue = .global(),
        orphanHandler: (@Sendable (_ pid: Int32, _ exit: ProcessExit) -> Void)? = nil
    ) throws(ProcessError) {
        self.orphanHandler = orphanHandler
        self.orphanQueue = orphanQueue

        // What children must set back to default, once this init has set SIGCHLD's.
        defer { flowrun_note_signal_dispositions() }
        // SIG_IGN or SA_NOCLDWAIT would make the kernel discard exit statuses.
        var current = sigaction()
        sigaction(SIGCHLD, nil, &current)
        let handler = unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
        if handler == unsafeBitCast(SIG_IGN, to: Int.self) || current.sa_flags & SA_NOCLDWAIT != 0 {
            var reset = sigaction()
            reset.__sigaction_handler.sa_handler = SIG_DFL
            sigaction(SIGCHLD, &reset, nil)
        }
        var childSignal = sigset_t()
        sigemptyset(&childSignal)
        sigaddset(&childSignal, SIGCHLD)
        pthread_sigmask(SIG_BLOCK, &childSignal, nil)
        if flowrun_set_child_subreaper(1) != 0 {
            throw ProcessError(operation: "prctl PR_SET_CHILD_SUBREAPER", code: errno)
        }
    }

    /// Spawns `request` (see `ProcessLauncher.spawn`) and calls `completion`
    /// once, on `queue`, when the child has exited and been reaped. Callable
    /// from any thread. Returns the pid (= the child's process group id).
    func launch(
        _ request: LaunchRequest, on queue: DispatchQueue,
        completion: @escaping @Sendable (ProcessExit) -> Void
    ) throws(ProcessError) -> Int32 {
        try launch(request, on: queue, measured: { exit, _ in completion(exit) })
    }

    /// `launch`, also handing on what the child used (`wait4`'s rusage).
    func launch(
        _ request: LaunchRequest, on queue: DispatchQueue,
        measured completion: @escaping @Sendable (ProcessExit, ResourceUsage) -> Void
    ) throws(ProcessError) -> Int32 {
        try watch(on: queue, measured: completion) { () throws(ProcessError) in
            try ProcessLauncher.spawn(request)
        }
    }

    /// Runs `spawn`, which starts one child and returns its pid, and
    /// registers `completion` for it without losing an exit that happens
    /// before the registration.
    func watch(
        on queue: DispatchQueue, completion: @escaping @Sendable (ProcessExit) -> Void,
        spawn: () throws(ProcessError) -> Int32
    ) throws(ProcessError) -> Int32 {
        try watch(on: queue, measured: { exit, _ in completion(exit) }, spawn: spawn)
    }

    private func watch(
        on queue: DispatchQueue, measured completion: @escaping @Sendable (ProcessExit, ResourceUsage) -> Void,
        spawn: () throws(ProcessError) -> Int32
    ) throws(ProcessError) -> Int32 {
        let registration = Registration(queue: queue, completion: completion)
        launchedAny.store(true, ordering: .releasing)
        state.withLock { $0.spawnsInFlight += 1 }
        let pid: Int32
        do {
            pid = try spawn()
        } catch {
            // glibc reaps a child whose exec failed itself; if waitpid(-1)
            // got there first, that status is reported as an orphan here.
            let orphans = state.withLock { state in
                state.spawnsInFlight -= 1
                return takeOrphansIfIdle(&state)
            }
            report(orphans: orphans)
            throw error
        }
        let (early, orphans) = state.withLock { state in
            state.spawnsInFlight -= 1
            let early = state.unclaimed.removeValue(forKey: pid)
            if early == nil { state.registrations[pid] = registration }
            return (early, takeOrphansIfIdle(&state))
        }
        if let early { queue.async { completion(ProcessExit(waitStatus: early.status), early.usage) } }
        report(orphans: orphans)
        return pid
    }

    /// Reaps whatever is ready. Completions registered for `inlineQueue` are
    /// appended to `work` for the caller to run on that queue (the event
    /// loop runs them in one `inlineQueue.sync`, with no thread hand-off);
    /// the others are dispatched to their queues. Passes must never overlap:
    /// call it from one thread only.
    func reapPass(runningInline inlineQueue: DispatchQueue, into work: inout [() -> Void]) {
        for (registration, exit) in reapReady() {
            if registration.queue === inlineQueue {
                work.append { registration.completion(exit.exit, exit.usage) }
            } else {
                registration.queue.async { registration.completion(exit.exit, exit.usage) }
            }
        }
    }

    /// Waits for every child that has exited; returns the registered ones
    /// and reports the orphans.
    private func reapReady() -> [(Registration, (exit: ProcessExit, usage: ResourceUsage))] {
        var finished: [(Registration, (exit: ProcessExit, usage: ResourceUsage))] = []
        var orphans: [(Int32, Int32)] = []
        var status: Int32 = 0
        var use = rusage()
        while true {
            // wait4, not waitpid: the same reaping, plus the child's rusage
            // (its own use and that of every descendant it waited for).
            let pid = wait4(-1, &status, WNOHANG, &use)
            if pid > 0 {
                let status = status
                let usage = Self.usage(use)
                state.withLock { state in
                    if let registration = state.registrations.removeValue(forKey: pid) {
                        finished.append((registration, (ProcessExit(waitStatus: status), usage)))
                    } else if state.spawnsInFlight > 0 {
                        state.unclaimed[pid] = (status, usage)
                    } else {
                        orphans.append((pid, status))
                    }
                }
            } else if pid < 0 && errno == EINTR {
                continue
            } else {
                break  // 0: children remain, none ready; ECHILD: no children
            }
        }
        report(orphans: orphans)
        return finished
    }

    /// Unclaimed statuses once no spawn is in flight: none of them can be a
    /// launched child, so they are orphans. Called with the lock held.
    private func takeOrphansIfIdle(_ state: inout State) -> [(Int32, Int32)] {
        guard state.spawnsInFlight == 0, !state.unclaimed.isEmpty else { return [] }
        defer { state.unclaimed.removeAll() }
        return state.unclaimed.map { ($0.key, $0.value.status) }
    }

    /// `ru_maxrss` (KiB on Linux) and user + system time.
    private static func usage(_ use: rusage) -> ResourceUsage {
        let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return ResourceUsage(peakMemoryBytes: UInt64(max(0, use.ru_maxrss)) * 1024, cpuSeconds: seconds(use.ru_utime) + seconds(use.ru_stime))
    }

    private func report(orphans: [(Int32, Int32)]) {
        guard let orphanHandler, !orphans.isEmpty else { return }
        orphanQueue.async {
            for (pid, status) in orphans { orphanHandler(pid, ProcessExit(waitStatus: status)) }
        }
    }
}
