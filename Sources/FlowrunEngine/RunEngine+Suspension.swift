import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FlowrunEvents

/// Ctrl-Z: flowrun stops with its tasks, and `fg` resumes them (SPEC §7).
///
/// Each task leads a process group of its own (in a terminal, a session of
/// its own too), so the terminal's SIGTSTP reaches flowrun (and the process
/// group it shares with its supervisor) but no task. On SIGTSTP flowrun
/// sends SIGSTOP to every running task's process group — SIGSTOP, not
/// SIGTSTP: in its own session a task's group has no parent there, and the
/// kernel drops SIGTSTP's default stop for such a group — pauses its
/// timers, lets the reporters give the terminal back, then stops itself with
/// SIGSTOP. The shell's SIGCONT (`fg`, `bg`) resumes flowrun; its handler
/// resumes the tasks and the timers, so a timeout counts only the time the
/// run was not stopped.
///
/// Not covered: a descendant that left its task's process group (its own
/// `setsid`) keeps running while the run is stopped; a `sleep:` task's
/// clock keeps counting.
extension RunEngine {
    /// On SIGTSTP, on the engine's queue: returns once flowrun runs again.
    func suspend() {
        guard suspendedAt == nil else { return }
        suspendedAt = Self.monotonicSeconds()
        signalRunningGroups(SIGSTOP)
        // Parked, not cancelled: their deadlines move by the time stopped.
        for timer in timers.values { timer.schedule(deadline: .distantFuture) }
        for case let reporter as any SuspendableReporter in reporters { reporter.suspend() }
        kill(getpid(), SIGSTOP)
    }

    /// On SIGCONT, on the engine's queue: the tasks and the timers go on.
    /// A SIGCONT with no Ctrl-Z before it changes nothing.
    func resumeAfterSuspension() {
        guard let suspendedAt else { return }
        self.suspendedAt = nil
        let now = Self.monotonicSeconds()
        let stoppedFor = now - suspendedAt
        scheduler.deadlines.postpone(by: stoppedFor)
        for (key, timer) in timers {
            let deadline = scheduler.deadlines.due[key] ?? now + stoppedFor
            timer.schedule(deadline: .now() + .nanoseconds(Int(max(0, deadline - now) * 1e9)))
        }
        signalRunningGroups(SIGCONT)
        for case let reporter as any SuspendableReporter in reporters { reporter.resume() }
    }

    /// `signal` to the process group of every task shell that runs.
    private func signalRunningGroups(_ signal: Int32) {
        for attempt in attempts.values {
            guard let pid = (attempt as? ProcessAttempt)?.pid, pid > 0 else { continue }
            kill(-pid, signal)
        }
    }
}
