extension Duration {
    /// Seconds as a floating-point number.
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The way a user writes it: `250ms`, `30s`, `1h30m`, `1.5s`.
    public var text: String {
        let totalMilliseconds = (seconds * 1000).rounded()
        if totalMilliseconds < 1000 { return "\(Int(totalMilliseconds))ms" }
        if totalMilliseconds.truncatingRemainder(dividingBy: 1000) != 0 {
            let value = totalMilliseconds / 1000
            return "\(value)s"
        }
        var remaining = Int(totalMilliseconds / 1000)
        var text = ""
        for (unit, size) in [("h", 3600), ("m", 60), ("s", 1)] where remaining >= size {
            text += "\(remaining / size)\(unit)"
            remaining %= size
        }
        return text
    }
}

extension SleepDuration {
    public var text: String {
        switch self {
        case .fixed(let duration): return duration.text
        case .range(let low, let high): return "\(low.text)..\(high.text)"
        }
    }
}

extension Double {
    /// `2` rather than `2.0`.
    package var formatted: String {
        self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self)
    }
}
