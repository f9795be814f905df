import FlowrunEvents

/// How many tasks succeeded without running, for the summary line:
/// ` (42 up to date, 3 restored)`.
struct ReusedTally {
    private(set) var upToDate = 0
    private(set) var restored = 0

    mutating func note(_ event: RunEvent.TaskFinished) {
        switch event.reused {
        case .upToDate?: upToDate += 1
        case .restored?: restored += 1
        case nil: break
        }
    }

    /// Empty when every task ran.
    var text: String {
        let parts = (upToDate > 0 ? ["\(upToDate) up to date"] : []) + (restored > 0 ? ["\(restored) restored"] : [])
        return parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"
    }
}
