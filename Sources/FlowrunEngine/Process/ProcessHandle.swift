import CFlowrunSystem
import Glibc

/// One process named by a pidfd: signals reach that process and never a
/// later one that reuses its pid, and the descriptor polls readable once it
/// has exited (zombies included). Closes the pidfd in `deinit` unless
/// ownership was taken with `takeDescriptor()`.
final class ProcessHandle {
    let entry: ProcessEntry
    private(set) var descriptor: Int32

    /// Opens a handle on the process `entry` describes, or nil when that
    /// process is gone: after opening, /proc must still show the same start
    /// time, so the pidfd cannot name a newer process with the same pid.
    init?(_ entry: ProcessEntry) {
        let fd = flowrun_pidfd_open(entry.pid)
        guard fd >= 0 else { return nil }
        guard let now = ProcessTable.entry(entry.pid), now.startTime == entry.startTime else {
            close(fd)
            return nil
        }
        self.entry = entry
        descriptor = fd
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// Sends `signal`; false once the process has exited.
    @discardableResult
    func send(_ signal: Int32) -> Bool {
        flowrun_pidfd_send_signal(descriptor, signal) == 0
    }

    /// Whether the process has exited (a zombie has).
    var hasExited: Bool {
        var item = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&item, 1, 0) > 0
    }

    /// Hands the pidfd to the caller, who must close it.
    func takeDescriptor() -> Int32 {
        defer { descriptor = -1 }
        return descriptor
    }
}
