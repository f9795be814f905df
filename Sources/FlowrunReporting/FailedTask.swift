import FlowrunEvents

/// A failed task as the final summary shows it: its name, its log, the
/// last lines it printed, and whether `continue_on_error` allowed it.
struct FailedTask {
    /// Lines of each failed task's output the summary repeats.
    static let summaryTailLines = 5

    var name: String
    var path: String?
    var tail: [String]
    var allowed: Bool

    /// The run's counts per status as the summary words them: failures
    /// `continue_on_error` allowed and members a join did not need apart
    /// from real failures and cancellations.
    static func counts(_ counts: [(status: TaskStatus, count: Int)], allowed: Int, notNeeded: Int) -> [(word: String, status: TaskStatus, count: Int)] {
        var result: [(word: String, status: TaskStatus, count: Int)] = []
        var allowedLeft = allowed
        for (status, count) in counts {
            var count = count
            if status == .failed || status == .timedOut {
                let taken = min(count, allowedLeft)
                allowedLeft -= taken
                count -= taken
                if taken > 0 { result.append(("failed (allowed)", .skipped, taken)) }
            }
            if status == .cancelled, notNeeded > 0 {
                let taken = min(count, notNeeded)
                count -= taken
                result.append(("not needed", .skipped, taken))
            }
            if count > 0 { result.append((status.rawValue.replacingAll("_", with: " "), status, count)) }
        }
        return result
    }
}

/// The first few names of a set that may be huge, and how many there are.
struct NameSample {
    private(set) var first: [String] = []
    private(set) var count = 0

    mutating func add(_ name: String) {
        if first.count < 5 { first.append(name) }
        count += 1
    }

    /// `a, b, c` or `a, b, c, … (1000)`.
    func listed(_ limit: Int) -> String {
        first.prefix(limit).joined(separator: ", ") + (count > limit ? ", … (\(count))" : "")
    }
}

/// The failed tasks a reporter lists at the end: the first `limit` kept
/// whole, every one counted — a fan-out of a million failing members costs
/// the reporter a counter, not a million log tails.
struct FailedTasks {
    let limit: Int
    private(set) var listed: [FailedTask] = []
    private(set) var count = 0
    private(set) var allowedCount = 0

    init(limit: Int) {
        self.limit = limit
    }

    mutating func append(_ failure: FailedTask) {
        count += 1
        if failure.allowed { allowedCount += 1 }
        if listed.count < limit { listed.append(failure) }
    }

    /// Failures counted but not kept.
    var unlisted: Int { count - listed.count }
}
