import CFlowrunSystem
import Glibc

/// Reaping beside the event loop, not inside it: a signalfd for SIGCHLD in
/// the loop's epoll set, and after each wake-up that may have brought an
/// exit (SIGCHLD, a byte on the wake pipe, a task's output ending) one
/// `ChildReaper` pass, whose completions join that wake-up's engine batch.
final class ChildExitWatch: @unchecked Sendable {
    // @unchecked: `mayHaveExited` is touched only by the loop's thread.
    private let reaper: ChildReaper
    private let signals: Int32
    private var mayHaveExited = false

    /// SIGCHLD must be blocked in the calling thread (the reaper's `init`
    /// does it) before the loop's thread started, so that thread inherits
    /// the block. Call it before the first child starts.
    init(reaper: ChildReaper, loop: EventLoop, outputs: OutputPump) throws(ProcessError) {
        // Non-blocking and close-on-exec: readable while an exit is pending
        // and no thread took the signal (SIGCHLD is blocked: `ChildReaper`).
        var childExit = sigset_t()
        sigemptyset(&childExit)
        sigaddset(&childExit, SIGCHLD)
        let descriptor = signalfd(-1, &childExit, Int32(SFD_NONBLOCK) | Int32(SFD_CLOEXEC))
        guard descriptor >= 0 else { throw ProcessError(operation: "signalfd SIGCHLD", code: errno) }
        // A thread that does not block SIGCHLD takes the signal instead of the
        // signalfd: its handler wakes the loop through the wake pipe.
        guard flowrun_forward_signal(SIGCHLD, loop.wakeDescriptor) == 0 else {
            Glibc.close(descriptor)
            throw ProcessError(operation: "sigaction SIGCHLD", code: errno)
        }
        self.reaper = reaper
        signals = descriptor
        // Any byte may be SIGCHLD's; a pass with nothing to reap is one waitpid.
        loop.onWake { [self] _ in mayHaveExited = true }
        loop.watch(descriptor) { [self] in
            drainSignals()
            mayHaveExited = true
        }
        loop.afterEvents { [self, loop] in
            // A shell's stdout closes as it exits, just before its SIGCHLD:
            // looking now often finds it reaped in the same wake-up.
            guard mayHaveExited || outputs.outputEnded else { return }
            mayHaveExited = false
            loop.deliver { reaper.reapPass(runningInline: loop.engineQueue, into: &$0) }
        }
        // An exit before the signalfd existed: look once.
        loop.wake()
    }

    /// Reads the SIGCHLDs the signalfd holds (only the wake-up matters: the
    /// reap pass asks the kernel who exited). A read that did not fill the
    /// buffer has emptied it.
    private func drainSignals() {
        var infos = (signalfd_siginfo(), signalfd_siginfo(), signalfd_siginfo(), signalfd_siginfo())
        let size = MemoryLayout.size(ofValue: infos)
        while withUnsafeMutableBytes(of: &infos, { Glibc.read(signals, $0.baseAddress, size) }) == size {}
    }
}
