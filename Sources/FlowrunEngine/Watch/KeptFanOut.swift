import FlowrunEvents

/// What a fan-out's members ended as in the last run that ran the group:
/// a later run that does not run it again counts them (as `resume` keeps a
/// task), and lists their names and items in its summary.
final class KeptFanOut {
    var counts: [TaskStatus: Int] = [:]
    /// A member failed (or timed out) without `continue_on_error`.
    var failed = false
    /// The summary's `members` and `items` of that run (JSON strings, comma-separated).
    var names: [UInt8] = []
    var items: [UInt8] = []
    var members: Int { counts.values.reduce(0, +) }
}
