/// The largest (and smallest) value each numeric key accepts (SPEC §8,
/// docs/FORMAT.md "Numeric bounds"). Validation enforces them, so every value
/// that validates also runs: nothing below overflows an `Int`, a `Double` to
/// integer conversion, or a timer.
public enum NumericBounds {
    /// `retries`: extra attempts after the first.
    public static let retries = 0...10_000
    /// `backoff`: the factor each retry's delay grows by.
    public static let backoff = 1.0...1_000.0
    /// `max_parallel`, group `concurrency`, semaphore capacities and weights, join `need: N`.
    public static let slots = 1...1_000_000
    /// Either end of `foreach: {range: [FIRST, LAST]}`.
    public static let rangeEnd = -1_000_000_000_000_000...1_000_000_000_000_000
    /// How many items one `range` may give: members are made as slots free
    /// up and let go once settled, so a range costs no memory per item.
    public static let rangeItems = 10_000_000
    /// How many combinations one `matrix:` may give (they are listed in the plan).
    public static let matrixCombinations = 100_000
    /// Fan-outs with more members than this have their names checked when
    /// they start, not when the file is loaded (that would list them all).
    public static let namesCheckedAtLoad = 100_000
    /// Every duration key (`timeout`, `retry_delay`, `kill_grace`, `sleep`, group and join `timeout`).
    public static let longestDuration: Duration = .seconds(366 * 24 * 3600)
    /// A retry's delay after backoff never exceeds this (nor the run's deadline).
    public static let longestRetryDelay: Duration = .seconds(24 * 3600)
}

extension Int {
    /// `1,000,000`: bounds in messages read like the table in FORMAT.md.
    package var grouped: String {
        let digits = String(magnitude)
        var result = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { result += "," }
            result.append(digit)
        }
        return self < 0 ? "-" + result : result
    }
}
