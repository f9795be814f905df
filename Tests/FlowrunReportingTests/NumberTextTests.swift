@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunReporting
import Testing

/// Numbers in events and plain lines are written without `String(Double)`
/// (it showed per task); the text must stay what `String(Double)` gave.
@Suite struct NumberTextTests {
    /// Seconds as JSON: milliseconds, `2` not `2.0`, as the rounded Double prints.
    static func reference(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int(rounded)) : String(rounded)
    }

    @Test func jsonNumbersMatchTheRoundedDoubleText() {
        var values: [Double] = [0, -0.0, 0.0004, 0.0005, 0.001, 0.05, 0.1, 0.25, 1, 1.5, 2.0, 9.999, 10.0005, 59.9996,
                                123.456, 86_400.001, -1.5, -0.0004, 1e11 + 0.123, .infinity, .nan]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 { values.append(Double.random(in: 0..<10_000, using: &generator)) }
        for _ in 0..<2_000 { values.append(Double(Int.random(in: 0..<5_000_000, using: &generator)) / 1000) }
        for value in values {
            #expect(JSONText.number(value) == Self.reference(value), "\(value)")
        }
    }

    @Test func decimalsAreWrittenDigitByDigit() {
        for value in [0, 7, -7, 10, 1234567890, Int.max, Int.min + 1, -100] {
            var bytes: [UInt8] = []
            JSONText.appendDecimal(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
    }

    /// Plain lines show hundredths below 10 s and tenths below two minutes.
    @Test func plainSecondsMatchTheRoundedDoubleText() {
        func reference(_ value: Double) -> String {
            value < 10 ? String((value * 100).rounded() / 100) + "s" : String((value * 10).rounded() / 10) + "s"
        }
        var values: [Double] = [0, 0.004, 0.005, 0.01, 0.05, 0.1, 0.999, 9.994, 9.995, 9.999, 10, 10.04, 10.05, 99.95, 119.94]
        for step in 0..<120_000 { values.append(Double(step) * 0.001) }
        for value in values {
            #expect(PlainReporter.seconds(value) == reference(value), "\(value)")
        }
        #expect(PlainReporter.seconds(125) == Duration.milliseconds(125_000).text)
    }
}
