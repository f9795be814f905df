import Testing
@testable import FlowrunEvents

/// Timestamps to the millisecond, as the console and the record write them.
@Suite struct ClockTextTests {
    // 2026-11-22 14:03:07 UTC.
    static let second = 1_795_356_187.0

    @Test(arguments: [(0.0, ".000"), (0.0051, ".005"), (0.0505, ".050"), (0.2505, ".250"), (0.9999, ".999")])
    func theMillisecondsAreThreeDigits(fraction: Double, text: String) {
        #expect(ClockText(Self.second + fraction, local: false).time == "14:03:07" + text)
        var line = ""
        ClockText.appendTime(Self.second + fraction, local: false, to: &line)
        #expect(line == "14:03:07" + text)
        var bytes: [UInt8] = []
        ClockText.appendISO8601(Self.second + fraction, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "\"2026-11-22T14:03:07\(text)Z\"")
    }
}
