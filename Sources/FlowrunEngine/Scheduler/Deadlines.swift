/// When each of the run's deadlines falls due: a table of `Deadlines.Key`
/// → seconds on the scheduler's clock. Pure data: the engine's
/// `DispatchSourceTimer`s only fire at these times, and a test reads
/// `expired(at:)` with a fake clock instead.
struct Deadlines {
    /// What a deadline is for: a task attempt's timeout, a retry's delay,
    /// a group's or a join's deadline, or the run's.
    enum Key: Hashable {
        case run
        case timeout(Int), retry(Int), group(Int), join(Int)
    }

    private(set) var due: [Key: Double] = [:]

    var isEmpty: Bool { due.isEmpty }

    /// Sets (or moves) `key` to `delay` from `now`; the time it falls due.
    @discardableResult
    mutating func arm(_ key: Key, after delay: Duration, now: Double) -> Double {
        let time = now + Double(delay.nanoseconds) / 1e9
        due[key] = time
        return time
    }

    /// Forgets `key` (it fired, or what it guarded ended first).
    mutating func disarm(_ key: Key) {
        // Twice per task, and most runs have none: no key hashed for nothing.
        guard !due.isEmpty else { return }
        due[key] = nil
    }

    mutating func disarmAll() { due.removeAll() }

    /// The keys due at `now` or before, earliest first.
    func expired(at now: Double) -> [Key] {
        due.filter { $0.value <= now }.sorted { $0.value < $1.value }.map(\.key)
    }

    /// Every deadline moved `seconds` later: the run was stopped (Ctrl-Z)
    /// that long, and a timeout counts only the time it ran.
    mutating func postpone(by seconds: Double) {
        for key in Array(due.keys) { due[key]! += seconds }
    }
}
