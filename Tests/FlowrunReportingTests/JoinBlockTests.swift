@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunReporting
import Testing

/// The join block renderer shared by the tty and plain views (SPEC §5).
@Suite struct JoinBlockTests {
    static func member(_ name: String, group: String? = nil, item: String? = nil, _ outcome: JoinReport.Outcome = .succeeded,
                       duration: Double? = 0.25, outputs: [(String, String)] = [], stdout: String = "") -> JoinReport.Member {
        var values = outputs.map { JoinReport.Value(key: $0.0, text: $0.1, isStdout: false) }
        if !stdout.isEmpty { values.append(JoinReport.Value(key: "stdout", text: stdout, isStdout: true)) }
        return JoinReport.Member(name: name, group: group, item: item, outcome: outcome, duration: duration, values: values, log: nil)
    }

    static func report(_ members: [JoinReport.Member], status: TaskStatus = .succeeded, timedOut: Bool = false, missing: [String] = []) -> JoinReport {
        JoinReport(name: "ready", status: status, timedOut: timedOut, counted: 2, succeeded: 2, required: 2, duration: 1.5,
                   missing: missing, members: members, path: ".flowrun/runs/R/joins/ready.json")
    }

    @Test func everyMemberWithItsOutcomeDurationOutputsAndStdout() {
        let block = JoinBlock.lines(Self.report([
            Self.member("fetch[0]", group: "fetch", item: "eu", outputs: [("size", "12")], stdout: "hello eu\n"),
            Self.member("fetch[1]", group: "fetch", item: "us", .failedAllowed, duration: 0.5),
            Self.member("build", outputs: [("version", "1.4")], stdout: "one\ntwo\nthree\nfour\n"),
            Self.member("slow", .notNeeded, duration: nil),
        ]), columns: 80)
        #expect(block.head == "ready succeeded: 2/2 succeeded (2 needed) after 1.5s")
        #expect(block.details.map(\.description) == [
            "    ✓ fetch[0] (eu)  0.25s  size=12  stdout: hello eu",
            "    ✗ fetch[1] (us)  failed (allowed), 0.5s",
            "    ✓ build  0.25s  version=1.4",
            "      │ … 1 more line",
            "      │ two",
            "      │ three",
            "      │ four",
            "    ⊘ slow  not needed",
            "    see: .flowrun/runs/R/joins/ready.json",
        ])
    }

    @Test func aTimedOutJoinNamesItsMissingMembers() {
        let block = JoinBlock.lines(Self.report([Self.member("a"), Self.member("b", .missing, duration: nil)],
                                                timedOut: true, missing: ["b"]), columns: 80)
        #expect(block.head.hasPrefix("ready timed out: "))
        #expect(block.details.map(\.description) == ["    missing: b", "    ✓ a  0.25s", "    ◌ b  missing"])
    }

    @Test func aBigFanOutShowsTheFirstTwentyAndCountsTheRestByOutcome() {
        let members = (0..<1000).map { Self.member("many[\($0)]", group: "many", item: "\($0 + 1)", $0 % 100 == 99 ? .failed : .succeeded) }
        let block = JoinBlock.lines(Self.report(members), columns: 80)
        #expect(block.details.count == 22)
        #expect(block.details[0].description == "    ✓ many[0] (1)  0.25s")
        #expect(block.details[20].description == "    … and 980 more: 970 succeeded, 10 failed")
        #expect(block.details[21].description == "    see: .flowrun/runs/R/joins/ready.json")
    }

    @Test func longValuesAreCutToTheWidthAndPointToTheRecord() {
        let long = String(repeating: "x", count: 300)
        let block = JoinBlock.lines(Self.report([Self.member("a", outputs: [("blob", long)])]), columns: 50)
        for line in block.details { #expect(line.width <= 49, "\(line)") }
        #expect(block.details[0].description.hasPrefix("    ✓ a  0.25s  blob=xxxx"))
        #expect(block.details[0].description.hasSuffix("…"))
        #expect(block.details.last?.description == "    see: .flowrun/runs/R/joins/ready.json")
    }

    @Test func aWrappedLineKeepsEveryWordAndBreaksAtSpaces() {
        let line = StyledLine("✗ fetch  failed (request failed: Couldn't connect to server, 0.06s)")
        let rows = JoinBlock.wrapped(line, width: 49, indent: "    ").map(\.description)
        #expect(rows == ["✗ fetch  failed (request failed: Couldn't ", "    connect to server, 0.06s)"])
    }

    @Test func reasonCodesBecomeWords() {
        #expect(ReasonText.describe("join_settled", cancelledBy: "all") == "not needed: join `all` had what it needed")
        #expect(ReasonText.describe("join_settled", cancelledBy: "all", joinEnd: .deadline) == "join `all` stopped waiting at its deadline")
        #expect(ReasonText.describe("fail_fast") == "another task failed (fail_fast)")
        #expect(ReasonText.describe("exit 3") == "exit 3")
    }

    @Test func pathsLoseTheirMiddle() {
        #expect(PathText.shortened("/tmp/flowrun-run.abc/record/20261125-1/logs/check.log", to: 30) == "/tmp/…/logs/check.log")
        #expect(PathText.shortened(".flowrun/runs/20261125-1/logs/check.log", to: 30) == ".flowrun/…/logs/check.log")
        #expect(PathText.shortened("short/path.log", to: 30) == "short/path.log")
    }
}
