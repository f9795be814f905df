import CFlowrunSystem
import Glibc

/// flowrun's own signals (SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGCONT) handled
/// on the event loop's thread, beside it rather than inside it: a handler
/// (`flowrun_forward_signal`, in C: an async-signal-safe `write`) puts the
/// signal's number on the loop's wake pipe (the self-pipe trick), and the
/// loop's wake-up hands each number to the engine in its batch.
///
/// Why not a libdispatch signal source: it keeps a signalfd in its manager
/// thread's epoll, and the kernel wakes every signalfd waiter for any
/// signal, so each child's SIGCHLD would wake that thread for nothing.
enum SignalForwarding {
    /// From now on, `signals` no longer have their default effect: each one
    /// that arrives runs `handler` on the loop's engine queue.
    static func forward(_ signals: [Int32], through loop: EventLoop, to handler: @escaping (Int32) -> Void) throws(ProcessError) {
        loop.onWake { bytes in
            // 0 wakes the loop for nothing else; SIGCHLD is `ChildExitWatch`'s.
            for byte in bytes where byte != 0 && Int32(byte) != SIGCHLD {
                loop.deliver { handler(Int32(byte)) }
            }
        }
        for signalNumber in signals where flowrun_forward_signal(signalNumber, loop.wakeDescriptor) != 0 {
            throw ProcessError(operation: "sigaction \(signalNumber)", code: errno)
        }
    }
}
