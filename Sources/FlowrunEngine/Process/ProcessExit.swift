import CFlowrunSystem

/// How a child process ended, decoded from a `waitpid` status.
enum ProcessExit: Hashable, Sendable, CustomStringConvertible {
    /// `exit(code)`; code is 0...255.
    case exited(Int32)
    /// Killed by this signal.
    case signalled(Int32)

    /// Decodes a status from `waitpid`/`wait4` for a process that terminated
    /// (WEXITED: neither stopped nor continued, which WNOHANG without
    /// WUNTRACED/WCONTINUED never reports).
    init(waitStatus status: Int32) {
        let signal = status & 0x7F
        self = signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
    }

    /// The shell's `$?` for this exit: the code, or 128 + signal.
    var shellStatus: Int32 {
        switch self {
        case .exited(let code): code
        case .signalled(let signal): 128 + signal
        }
    }

    /// "exit 3" or "signal 9 (SIGKILL)"
    var description: String {
        switch self {
        case .exited(let code):
            return "exit \(code)"
        case .signalled(let signal):
            guard let name = flowrun_signal_abbreviation(signal) else { return "signal \(signal)" }
            return "signal \(signal) (SIG\(String(cString: name)))"
        }
    }
}
