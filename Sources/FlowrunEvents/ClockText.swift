#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A timestamp's date and time of day as text, to the millisecond.
package struct ClockText {
    /// `2026-11-22`
    var date: String
    /// `14:03:07.250`
    package var time: String

    package init(_ seconds: Double, local: Bool) {
        let (second, milliseconds) = Self.split(seconds)
        let cached = Self.cachedSecond(second, local: local)
        date = cached.date
        time = cached.time + Self.millisecondText(milliseconds)
    }

    /// `14:03:07.250`, appended to `text`.
    package static func appendTime(_ seconds: Double, local: Bool, to text: inout String) {
        let (second, milliseconds) = split(seconds)
        text += cachedSecond(second, local: local).time
        text += millisecondText(milliseconds)
    }

    /// `2026-11-22T02:51:03.123Z` (UTC), as JSON: quoted.
    static func appendISO8601(_ seconds: Double, to bytes: inout [UInt8]) {
        let (second, milliseconds) = split(seconds)
        let cached = cachedSecond(second, local: false)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: cached.date.utf8)
        bytes.append(UInt8(ascii: "T"))
        bytes.append(contentsOf: cached.time.utf8)
        bytes.append(contentsOf: millisecondText(milliseconds).utf8)
        bytes.append(UInt8(ascii: "Z"))
        bytes.append(UInt8(ascii: "\""))
    }

    private static func split(_ seconds: Double) -> (second: Int, milliseconds: Int) {
        let whole = Int(seconds.rounded(.down))
        return (whole, min(999, max(0, Int((seconds - Double(whole)) * 1000))))
    }

    /// Several timestamps per task, nearly all within a second of the last:
    /// the calendar part is worked out once a second.
    private static func cachedSecond(_ second: Int, local: Bool) -> Second {
        lastSecond.withLock { cache in
            let slot = local ? 1 : 0
            if cache[slot].second != second {
                cache[slot] = calendar(second, local: local)
            }
            return cache[slot]
        }
    }

    private struct Second {
        var second: Int
        var date: String
        /// `14:03:07`
        var time: String
    }

    private static let lastSecond = Mutex([Second(second: -1, date: "", time: ""), Second(second: -1, date: "", time: "")])

    /// `.000` … `.999`: a small string, held inline (a table of all 1,000,
    /// made at the first timestamp, was 3 % of a no-op run's instructions).
    private static func millisecondText(_ milliseconds: Int) -> String {
        String(unsafeUninitializedCapacity: 4) { text in
            text[0] = UInt8(ascii: ".")
            text[1] = UInt8(ascii: "0") + UInt8(milliseconds / 100 % 10)
            text[2] = UInt8(ascii: "0") + UInt8(milliseconds / 10 % 10)
            text[3] = UInt8(ascii: "0") + UInt8(milliseconds % 10)
            return 4
        }
    }

    private static func calendar(_ second: Int, local: Bool) -> Second {
        var whole = time_t(second)
        var parts = tm()
        if local { localtime_r(&whole, &parts) } else { gmtime_r(&whole, &parts) }
        return Second(
            second: second,
            date: "\(parts.tm_year + 1900)-\(padded(Int(parts.tm_mon) + 1, 2))-\(padded(Int(parts.tm_mday), 2))",
            time: "\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2))")
    }

    /// `value` with leading zeros to `width` digits.
    private static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.utf8.count)) + digits
    }
}
