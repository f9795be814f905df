import CFlowrunSystem
#if canImport(Glibc)
import Glibc
#endif

/// One step of stopping an attempt early, given to its executor as data:
/// the engine decides what a timeout, a cancel or a second Ctrl-C does, each
/// executor only how to do it (signals to a local process tree, `scancel`
/// for a Slurm job, nothing but an early end for `http:` and `sleep:`).
enum TeardownStep: Hashable, Sendable, CustomStringConvertible {
    /// Send `signal`, then give the attempt `grace` to end before the next step.
    case signal(Int32, grace: Duration)
    /// SIGKILL (`scancel` without a signal): nothing is waited for.
    case kill

    /// A timeout, a cancel, `fail_fast`, a join's quorum: SIGTERM, `kill_grace`, SIGKILL.
    static func graceful(_ grace: Duration) -> [TeardownStep] { [.signal(SIGTERM, grace: grace), .kill] }

    /// A second Ctrl-C: SIGKILL at once.
    static let immediate: [TeardownStep] = [.kill]

    /// `TERM`, as `scancel --signal=` and `kill -s` take it (nil for a number with no name).
    static func signalName(_ signal: Int32) -> String? {
        flowrun_signal_abbreviation(signal).map { String(cString: $0) }
    }

    /// "SIGTERM, 5s" / "SIGKILL": for logs and test failures.
    var description: String {
        switch self {
        case .signal(let signal, let grace): "SIG\(Self.signalName(signal) ?? String(signal)), \(grace)"
        case .kill: "SIGKILL"
        }
    }
}
