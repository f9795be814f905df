import FlowrunModel

/// Durations as users write them: `250ms`, `30s`, `2m`, `1h`, `1h30m`, a bare
/// number of seconds (`1.5`), and for `sleep` a range `1s..3s`.
enum DurationSyntax {
    struct Problem: Error {
        var message: String
    }

    static func parse(_ text: String) throws(Problem) -> Duration {
        let trimmed = text.trimmingWhitespace
        if Substring(trimmed).range(of: "..") != nil {
            throw Problem(message: "a range like '\(text)' is allowed only for sleep")
        }
        if let seconds = Double(trimmed), trimmed.first?.isNumber == true || trimmed.first == "." {
            guard seconds.isFinite, seconds >= 0 else { throw Problem(message: "'\(text)' is not a duration") }
            return try checked(seconds, text)
        }
        var total = 0.0
        var rest = Substring(trimmed)
        var sawUnit = false
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isNumber || $0 == "." }
            guard !digits.isEmpty, let value = Double(digits) else {
                throw Problem(message: "'\(text)' is not a duration (expected like 250ms, 30s, 2m, 1h30m or 1.5)")
            }
            rest = rest.dropFirst(digits.count)
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            switch unit {
            case "ms": total += value / 1000
            case "s": total += value
            case "m": total += value * 60
            case "h": total += value * 3600
            case "": throw Problem(message: "'\(text)' is missing a unit after \(digits) (ms, s, m or h)")
            default: throw Problem(message: "'\(text)' has an unknown unit '\(unit)' (use ms, s, m or h)")
            }
            sawUnit = true
        }
        guard sawUnit else { throw Problem(message: "expected a duration, found nothing") }
        return try checked(total, text)
    }

    /// `A..B` for `sleep`, or a single duration.
    static func parseSleep(_ text: String) throws(Problem) -> SleepDuration {
        guard let separator = Substring(text).range(of: "..") else { return .fixed(try parse(text)) }
        let low = try parse(String(text[..<separator.lowerBound]))
        let high = try parse(String(text[separator.upperBound...]))
        guard low <= high else { throw Problem(message: "the range '\(text)' ends before it starts") }
        return .range(low, high)
    }

    private static func checked(_ seconds: Double, _ text: String) throws(Problem) -> Duration {
        // A year (366 days) is far beyond any sane timeout and keeps Duration arithmetic safe.
        guard seconds <= NumericBounds.longestDuration.seconds else { throw Problem(message: "'\(text)' is longer than a year") }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}

extension String {
    var trimmingWhitespace: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}
