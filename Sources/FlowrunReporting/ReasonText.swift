import FlowrunEvents

/// Why something ended, in words for people: the engine's reason codes
/// (`join_settled`, `fail_fast`, …) stay in the JSON and the record; the tty
/// and plain views show these instead.
enum ReasonText {
    /// How a join that cancelled its unsettled members ended.
    enum JoinEnd {
        /// It had what it needed: the rest were not needed.
        case met
        /// It could no longer succeed.
        case failed
        /// Its deadline passed.
        case deadline

        init(_ event: RunEvent.JoinCompleted) {
            self = event.timedOut ? .deadline : event.status.isFailure ? .failed : .met
        }
    }

    /// `not needed: join `all` had what it needed` for `join_settled`; other reasons in words.
    static func describe(_ reason: String, cancelledBy join: String? = nil, joinEnd: JoinEnd? = nil) -> String {
        switch reason {
        case CancelReason.joinSettled.rawValue:
            let name = join.map { "join `\($0)`" } ?? "its join"
            switch joinEnd ?? .met {
            case .met: return "not needed: \(name) had what it needed"
            case .failed: return "\(name) can no longer succeed"
            case .deadline: return "\(name) stopped waiting at its deadline"
            }
        case CancelReason.failFast.rawValue: return "another task failed (fail_fast)"
        case CancelReason.runTimeout.rawValue: return "the run's timeout passed"
        case CancelReason.groupTimeout.rawValue: return "its group's deadline passed"
        case CancelReason.signal.rawValue: return "the run was stopped by a signal"
        case CancelReason.descriptors.rawValue: return "flowrun ran out of file descriptors (ulimit -n)"
        case CancelReason.serviceExited.rawValue: return "a service it needs exited on its own"
        case CancelReason.sourcesChanged.rawValue: return "its sources changed; the next run starts it again"
        case CancelReason.watchFailed.rawValue: return "flowrun watch could not keep watching (see above)"
        default: return reason
        }
    }

    /// Whether a finished task is a member a join cancelled because it had what it needed.
    static func isNotNeeded(_ event: RunEvent.TaskFinished, joinEnd: JoinEnd?) -> Bool {
        event.status == .cancelled && event.reason == CancelReason.joinSettled.rawValue && (joinEnd ?? .met) == .met
    }
}
