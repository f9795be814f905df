@testable import FlowrunModel
@testable import FlowrunLoading
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

@Suite struct DurationSyntaxTests {
    @Test(arguments: [
        ("250ms", 0.25), ("30s", 30), ("2m", 120), ("1h", 3600), ("1h30m", 5400), ("1.5", 1.5), ("0", 0), ("1m30s", 90), ("1.5s", 1.5),
    ])
    func validDurations(text: String, seconds: Double) throws {
        #expect(try DurationSyntax.parse(text).seconds == seconds)
    }

    @Test(arguments: [
        ("5x", "'5x' has an unknown unit 'x' (use ms, s, m or h)"),
        ("ten", "'ten' is not a duration (expected like 250ms, 30s, 2m, 1h30m or 1.5)"),
        ("1h30", "'1h30' is missing a unit after 30 (ms, s, m or h)"),
        ("-1", "'-1' is not a duration (expected like 250ms, 30s, 2m, 1h30m or 1.5)"),
        ("9999h", "'9999h' is longer than a year"),
    ])
    func invalidDurations(text: String, message: String) {
        #expect(throws: DurationSyntax.Problem.self) { try DurationSyntax.parse(text) }
        do {
            _ = try DurationSyntax.parse(text)
        } catch {
            #expect(error.message == message)
        }
    }

    @Test func sleepRanges() throws {
        #expect(try DurationSyntax.parseSleep("1s..3s") == .range(.seconds(1), .seconds(3)))
        #expect(try DurationSyntax.parseSleep("2") == .fixed(.seconds(2)))
        #expect(throws: DurationSyntax.Problem.self) { try DurationSyntax.parseSleep("3s..1s") }
    }

    @Test(arguments: [(0.25, "250ms"), (30, "30s"), (90, "1m30s"), (5400, "1h30m"), (1.5, "1.5s")])
    func durationsPrintTheWayUsersWriteThem(seconds: Double, text: String) {
        #expect(Duration.milliseconds(Int64(seconds * 1000)).text == text)
    }

    @Test func rangesOnlyForSleep() {
        #expect(diagnostics("tasks: { a: { run: \"true\", timeout: 1s..2s } }") == [
            "test.yaml:1:37: error: a range like '1s..2s' is allowed only for sleep in timeout",
        ])
    }
}
