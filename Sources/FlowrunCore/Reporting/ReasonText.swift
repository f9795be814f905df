/// Why something ended, in words for people: the engine's reason codes
/// (`join_settled`, `fail_fast`, …) stay in the JSON and the record; the tty
/// and plain views show these instead.
enum ReasonText {
    /// `join `all` had what it needed` for `join_settled`; other reasons as they are.
    /// `joinFailed`: the join cancelled its members because it could no longer succeed.
    static func describe(_ reason: String, cancelledBy join: String? = nil, joinFailed: Bool = false) -> String {
        switch reason {
        case CancelReason.joinSettled.rawValue:
            let name = join.map { "join `\($0)`" } ?? "its join"
            return joinFailed ? "\(name) can no longer succeed" : "not needed: \(name) had what it needed"
        case CancelReason.failFast.rawValue: return "another task failed (fail_fast)"
        case CancelReason.runTimeout.rawValue: return "the run's timeout passed"
        case CancelReason.groupTimeout.rawValue: return "its group's deadline passed"
        case CancelReason.signal.rawValue: return "the run was stopped by a signal"
        default: return reason
        }
    }

    /// The word a finished task's line shows for its status: `not needed` for a member a join cancelled.
    static func statusWord(_ status: TaskStatus, reason: String?) -> String {
        if status == .cancelled && reason == CancelReason.joinSettled.rawValue { return "not needed" }
        return status.rawValue.replacingAll("_", with: " ")
    }
}
