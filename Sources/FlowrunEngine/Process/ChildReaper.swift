import CFlowrunSystem
import Dispatch
import Glibc
import Synchronization

/// Reaps child processes without a thread per child and routes each exit to
/// the completion registered for its pid. Create exactly one, early, before
/// any child is started, and keep it for the life of the process.
///
/// How: something that hears SIGCHLD runs a reap pass; the pass calls
/// `waitpid` with WNOHANG until nothing more is ready, so coalesced SIGCHLDs
/// lose nothing. What hears it (`Wakeup`): flowrun's run uses its event loop
/// (`ChildExitWatch`: a signalfd, plus a handler for a SIGCHLD that
/// a thread not blocking it takes), which delivers exits with no thread
/// hand-off; otherwise a `DispatchSourceSignal` runs passes on a private
/// serial queue. On Linux, libdispatch's signal
/// source is a signalfd plus a SIGCHLD handler that libdispatch installs
/// itself: a signal that lands on a thread which does not block it is
/// re-raised at libdispatch's manager thread, so correctness does not depend
/// on signal masks. Speed does: that detour costs a signal frame and a
/// `pthread_kill` per exit, so `init` blocks SIGCHLD in the calling thread
/// (Dispatch's worker threads block it already). Create the reaper on the
/// main thread before starting other threads, and they inherit the block;
/// children do not (`ProcessLauncher` gives them an empty mask).
///
/// What must hold: SIGCHLD is never SIG_IGN (the kernel would then reap
/// children itself and `waitpid` would fail with ECHILD) and nothing else
/// replaces its disposition; in `.allChildren` scope nothing else in the
/// process waits for children. `init` returns only once the source is
/// registered, so no exit between `init` and the first spawn can be missed.
final class ChildReaper: Sendable {
    /// Which children this reaper waits for.
    enum Scope: Sendable {
        /// Every child of the process, with `waitpid(-1)`; the process becomes
        /// a child subreaper, so orphaned descendants re-parent to it and are
        /// reaped and reported to `orphanHandler`. flowrun's own choice.
        case allChildren
        /// Only children started through `launch`, each with `waitpid(pid)`:
        /// for a host where other code waits for its own children (a test
        /// runner). No subreaper, no orphans reported.
        case launchedChildren
    }

    /// What tells the reaper that a child exited.
    enum Wakeup: Sendable {
        /// A `DispatchSourceSignal` for SIGCHLD; reap passes run on a private
        /// queue (targeting `target`).
        case signalSource
        /// The owner's event loop: it watches SIGCHLD (`ChildExitWatch`)
        /// and calls `reapPass(runningInline:into:)` on its own thread.
        case eventLoop
    }

    /// What a registered child's exit is reported to.
    private struct Registration {
        var queue: DispatchQueue
        var completion: @Sendable (ProcessExit) -> Void
    }

    /// The registry. Owned by `state`'s mutex: `launch` runs on any thread,
    /// reap passes on `reapQueue`.
    private struct State {
        var registrations: [Int32: Registration] = [:]
        /// Statuses reaped before their pid was registered (`.allChildren`):
        /// `waitpid(-1)` can win the race against the spawning thread.
        var unclaimed: [Int32: Int32] = [:]
        /// Spawns between "about to spawn" and "registered". While > 0 an
        /// unknown pid may be one of ours; once 0, unclaimed pids are orphans.
        var spawnsInFlight = 0
    }

    let scope: Scope
    private let state = Mutex(State())
    /// Serial: reap passes never overlap, so no pid is waited for twice.
    private let reapQueue: DispatchQueue
    /// Never reassigned; libdispatch sources are thread-safe objects that
    /// Swift's Dispatch overlay does not mark Sendable, hence nonisolated(unsafe).
    nonisolated(unsafe) private let signalSource: (any DispatchSourceSignal)?
    private let orphanHandler: (@Sendable (Int32, ProcessExit) -> Void)?
    private let orphanQueue: DispatchQueue

    /// Starts reaping. In `.allChildren` scope, also makes this process a
    /// child subreaper. `orphanHandler` (on `orphanQueue`) hears of every
    /// reaped process that was not launched through this reaper.
    ///
    /// `target` (`.signalSource` only): a serial queue for reap passes to run
    /// on, typically the one completions go to, saving a thread hand-off per
    /// exit. Do not call `init` from `target` itself: it waits for a block there.
    init(
        scope: Scope,
        wakeup: Wakeup = .signalSource,
        target: DispatchQueue? = nil,
        orphanQueue: DispatchQueue = .global(),
        orphanHandler: (@Sendable (_ pid: Int32, _ exit: ProcessExit) -> Void)? = nil
    ) throws(ProcessError) {
        // `.launchedChildren` looks once more after each registration, on reapQueue.
        precondition(wakeup == .signalSource || scope == .allChildren, "an event loop reaps all children")
        self.scope = scope
        reapQueue = DispatchQueue(label: "flowrun.child-reaper", target: target)
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
        if scope == .allChildren, flowrun_set_child_subreaper(1) != 0 {
            throw ProcessError(operation: "prctl PR_SET_CHILD_SUBREAPER", code: errno)
        }

        guard wakeup == .signalSource else {
            signalSource = nil
            return
        }
        let source = DispatchSource.makeSignalSource(signal: SIGCHLD, queue: reapQueue)
        signalSource = source
        source.setEventHandler { [weak self] in self?.reapPass() }
        let registered = DispatchSemaphore(value: 0)
        source.setRegistrationHandler { registered.signal() }
        source.activate()
        registered.wait()
        // A child that exited before the source was registered sent a SIGCHLD
        // nobody saw: look once.
        reapQueue.async { [weak self] in self?.reapPass() }
    }

    deinit { signalSource?.cancel() }

    /// Spawns `request` (see `ProcessLauncher.spawn`) and calls `completion`
    /// once, on `queue`, when the child has exited and been reaped. Callable
    /// from any thread. Returns the pid (= the child's process group id).
    func launch(
        _ request: LaunchRequest, on queue: DispatchQueue,
        completion: @escaping @Sendable (ProcessExit) -> Void
    ) throws(ProcessError) -> Int32 {
        try watch(on: queue, completion: completion) { () throws(ProcessError) in
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
        let registration = Registration(queue: queue, completion: completion)
        switch scope {
        case .launchedChildren:
            let pid = try spawn()
            state.withLock { $0.registrations[pid] = registration }
            // The child may already be a zombie whose SIGCHLD came before it
            // was registered: look once more.
            reapQueue.async { [weak self] in self?.reapPass() }
            return pid

        case .allChildren:
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
            if let early { queue.async { completion(ProcessExit(waitStatus: early)) } }
            report(orphans: orphans)
            return pid
        }
    }

    /// Reaps whatever is ready. Completions registered for `inlineQueue` are
    /// appended to `work` for the caller to run on that queue (`.eventLoop`:
    /// the loop runs them in one `inlineQueue.sync`, with no thread hand-off);
    /// the others are dispatched to their queues. Passes must never overlap:
    /// call it from one thread only.
    func reapPass(runningInline inlineQueue: DispatchQueue, into work: inout [() -> Void]) {
        for (registration, exit) in reapReady() {
            if registration.queue === inlineQueue {
                work.append { registration.completion(exit) }
            } else {
                registration.queue.async { registration.completion(exit) }
            }
        }
    }

    /// Reaps whatever is ready; runs on `reapQueue` only.
    private func reapPass() {
        for (registration, exit) in reapReady() {
            registration.queue.async { registration.completion(exit) }
        }
    }

    /// Waits for every child that has exited; returns the registered ones
    /// and reports the orphans.
    private func reapReady() -> [(Registration, ProcessExit)] {
        var finished: [(Registration, ProcessExit)] = []
        var orphans: [(Int32, Int32)] = []
        switch scope {
        case .allChildren:
            var status: Int32 = 0
            while true {
                let pid = waitpid(-1, &status, WNOHANG)
                if pid > 0 {
                    let status = status
                    state.withLock { state in
                        if let registration = state.registrations.removeValue(forKey: pid) {
                            finished.append((registration, ProcessExit(waitStatus: status)))
                        } else if state.spawnsInFlight > 0 {
                            state.unclaimed[pid] = status
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
        case .launchedChildren:
            let pids = state.withLock { Array($0.registrations.keys) }
            for pid in pids {
                var status: Int32 = 0
                var result: Int32
                repeat { result = waitpid(pid, &status, WNOHANG) } while result < 0 && errno == EINTR
                guard result == pid else {
                    precondition(result == 0, "child \(pid) was reaped outside ChildReaper (waitpid: errno \(errno))")
                    continue
                }
                if let registration = state.withLock({ $0.registrations.removeValue(forKey: pid) }) {
                    finished.append((registration, ProcessExit(waitStatus: status)))
                }
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
        return state.unclaimed.map { ($0.key, $0.value) }
    }

    private func report(orphans: [(Int32, Int32)]) {
        guard let orphanHandler, !orphans.isEmpty else { return }
        orphanQueue.async {
            for (pid, status) in orphans { orphanHandler(pid, ProcessExit(waitStatus: status)) }
        }
    }
}
