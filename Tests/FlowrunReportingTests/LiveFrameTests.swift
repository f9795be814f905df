@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunReporting
import Foundation
import Testing

/// Events as the engine emits them, for feeding the live view's state.
private func event(at elapsed: Double = 0, _ payload: RunEvent.Payload) -> RunEvent {
    RunEvent(elapsed: elapsed, payload)
}

private func started(_ workflow: String = "downloads", members: Int = 0, sizedAtRunTime: [String]? = nil) -> RunEvent {
    event(.runStarted(.init(
        runID: "20261122-140307-4f1c", workflow: workflow, path: ".flowrun/runs/20261122-140307-4f1c", maxParallel: 4,
        members: members, sizedAtRunTime: sizedAtRunTime)))
}

private func startedTask(_ name: String, at elapsed: Double, attempt: Int = 1) -> RunEvent {
    event(at: elapsed, .taskStarted(.init(task: name, attempt: attempt)))
}

private func progress(_ name: String, _ percent: Int) -> RunEvent {
    event(.taskProgress(.init(task: name, percent: percent)))
}

private func waiting(_ name: String, on entries: [String]) -> RunEvent {
    event(.taskWaiting(.init(task: name, waitingOn: entries)))
}

private func finished(
    _ name: String, _ status: TaskStatus, duration: Double = 1.5, attempt: Int = 1, _ configure: (inout RunEvent.TaskFinished) -> Void = { _ in }
) -> RunEvent {
    var finished = RunEvent.TaskFinished(task: name, status: status, attempt: attempt, duration: duration)
    configure(&finished)
    return event(.taskFinished(finished))
}

private func runFinished(at elapsed: Double = 0, duration: Double = 0, exitCode: Int = 0, counts: [(status: TaskStatus, count: Int)] = [], path: String = "rec") -> RunEvent {
    event(at: elapsed, .runFinished(.init(runID: "20261122-140307-4f1c", duration: duration, counts: counts, exitCode: exitCode, path: path)))
}

private let plain = TerminalStyle(usesColor: false)

/// The state after `events`, and the lines above the region they printed.
private func state(_ events: [RunEvent]) -> (LiveState, [String]) {
    var state = LiveState()
    var above: [String] = []
    for event in events { above += state.apply(event).map(\.description) }
    return (state, above)
}

@Suite struct LiveFrameTests {
    @Test func runningTasksShowProgressElapsedAndAttemptThenWhatWaits() {
        let (live, above) = state([
            started(members: 3),
            startedTask("file-1", at: 0.1),
            progress("file-1", 60),
            startedTask("file-10", at: 1.0, attempt: 2),
            startedTask("file-2", at: 2.0),
            waiting("file-3", on: ["group downloads 3/3 held by file-1, file-10, file-2"]),
            waiting("file-4", on: ["group downloads 3/3 held by file-1, file-10, file-2"]),
            waiting("file-5", on: ["group downloads 3/3 held by file-1, file-10, file-2"]),
            waiting("file-6", on: ["group downloads 3/3 held by file-1, file-10, file-2"]),
            waiting("restore", on: ["semaphore db 1/1 held by backup"]),
        ])
        #expect(above.isEmpty)
        let lines = LiveFrame.lines(live, now: 3.45, columns: 60, rows: 20, tick: 2).map(\.description)
        #expect(lines == [
            "⠹ downloads  3.4s · 3 running · 5 waiting · 0/8 done",
            "  file-1   [██████░░░░]  60%    3.3s",
            "  file-10  [░░░░░░░░░░]         2.4s  attempt 2",
            "  file-2   [░░░░░░░░░░]         1.4s",
            "  ◌ 4 waiting for group downloads: file-3, file-4, file-5, …",
            "  ◌ restore  waiting for semaphore db 1/1 held by backup",
        ])
    }

    /// Issue 31: while a fan-out read from a stdout is going, the total is not known, and the header says so.
    @Test func aFanOutSizedAtRunTimeShowsDoneAndMoreComingUntilItsGroupFinishes() {
        var (live, _) = state([
            started("downloads", members: 3, sizedAtRunTime: ["read"]),
            startedTask("read[0]", at: 0.1),
            finished("list", .succeeded),
        ])
        #expect(LiveFrame.lines(live, now: 1, columns: 80, rows: 20, tick: 0).map(\.description).first
            == "⠋ downloads  1.0s · 1 running · 1 done, more coming")
        #expect(LiveFrame.lines(live, now: 1, columns: 40, rows: 20, tick: 0).map(\.description).first?.hasSuffix("1 done+") == true)
        for next in [finished("read[0]", .succeeded), event(.groupFinished(.init(group: "read", status: .succeeded, members: 1, succeeded: 1)))] {
            _ = live.apply(next)
        }
        #expect(LiveFrame.lines(live, now: 2, columns: 80, rows: 20, tick: 0).map(\.description).first
            == "⠋ downloads  2.0s · 0 running · 2/3 done")
    }

    @Test func tasksThatStartOrFinishLeaveTheWaitingLines() {
        let (live, _) = state([
            started(),
            waiting("a", on: ["max_parallel 1/1"]),
            waiting("b", on: ["max_parallel 1/1"]),
            waiting("c", on: ["max_parallel 1/1"]),
            startedTask("a", at: 1),
            finished("b", .cancelled, attempt: 0),
        ])
        let lines = LiveFrame.lines(live, now: 2, columns: 80, rows: 20).map(\.description)
        #expect(lines.last == "  ◌ c  waiting for max_parallel 1/1")
        #expect(live.waiting.count == 1)
    }

    @Test func moreRunningTasksThanFitShowTheFirstOnesAndACount() {
        var events = [started(members: 40)]
        for index in 0..<40 { events.append(startedTask("t\(index)", at: Double(index) / 10)) }
        let (live, _) = state(events)
        let lines = LiveFrame.lines(live, now: 5, columns: 60, rows: 10).map(\.description)
        #expect(lines.count == 10)
        #expect(lines[1].hasPrefix("  t0 "))
        #expect(lines[8].hasPrefix("  t7 "))
        #expect(lines[9] == "  … and 32 more running")
    }

    @Test func retryingTasksShowWhenTheirNextAttemptIsDue() {
        let (live, above) = state([
            started(),
            startedTask("flaky", at: 0),
            event(at: 1, .taskRetrying(.init(task: "flaky", status: .failed, reason: "exit 1", attempt: 2, delay: 2))),
        ])
        #expect(above == ["↻ flaky failed (exit 1), attempt 2 in 2.0s"])
        let lines = LiveFrame.lines(live, now: 1.5, columns: 60, rows: 10).map(\.description)
        #expect(lines == ["⠋ downloads  1.5s · 0 running · 1 waiting · 0/1 done", "  ↻ flaky  attempt 2 in 1.5s"])
    }

    @Test(arguments: [20, 44, 60, 80, 132])
    func noRenderedLineIsWiderThanTheTerminal(columns: Int) {
        let long = String(repeating: "very-long-task-name-", count: 8)
        var events = [started("a-workflow-with-a-rather-long-name-" + long, members: 12)]
        for index in 0..<12 {
            events.append(startedTask("\(long)\(index)", at: 0))
            events.append(progress("\(long)\(index)", index * 9))
            events.append(waiting("w-日本語-\(long)\(index)", on: ["semaphore s\(index) 1/1 held by \(long)"]))
        }
        let (live, _) = state(events)
        let lines = LiveFrame.lines(live, now: 3725, columns: columns, rows: 12, tick: 7)
        #expect(lines.count <= 12)
        #expect(LiveFrame.lines(live, now: 3725, columns: columns, rows: 6).count <= 6)
        for line in lines {
            for style in [plain, TerminalStyle(usesColor: true)] {
                let rendered = style.render(line, columns: columns - 1)
                let visible = TerminalText.sanitized(rendered)
                #expect(TerminalText.width(visible) <= columns - 1, "\(visible)")
            }
        }
    }

    @Test func theRegionEndsWhenTheRunFinishes() {
        let (live, _) = state([started(), startedTask("a", at: 0), runFinished()])
        #expect(LiveFrame.lines(live, now: 1, columns: 60, rows: 10).isEmpty)
    }

    @Test(arguments: [(0.04, "0.0s"), (9.99, "9.9s"), (59.9, "59.9s"), (61, "1m01s"), (3725, "1h02m")])
    func clockShowsElapsedTimeAtAGlance(seconds: Double, text: String) {
        #expect(LiveFrame.clock(seconds) == text)
    }
}

@Suite struct LiveFrameLinesAboveTests {
    @Test func finishedTasksPrintOnceWithSymbolDurationAndForFailuresTheLogTail() {
        let (_, above) = state([
            started(),
            finished("fetch", .succeeded, duration: 0.41),
            finished("test", .failed, duration: 2.5) {
                $0.exitCode = 1
                $0.reason = "exit 1"
                $0.log = .init(path: "rec/logs/test.log", offsetInRecord: 0)
                $0.logTail = ["FAIL: upload \u{1B}[31m500\u{1B}[0m", "progress 10%\r100%"]
            },
            finished("slow", .timedOut, duration: 5, attempt: 2) { $0.reason = "timed out after 5s" },
            finished("deploy", .skipped, attempt: 0) { $0.reason = "a need did not succeed" },
            finished("lead", .cancelled, duration: 0.2) { $0.reason = "join_settled"; $0.cancelledBy = "page-ready" },
        ])
        #expect(above == [
            "✓ fetch  0.41s",
            "✗ test  failed (exit 1, 2.5s)",
            "    │ FAIL: upload 500",
            "    │ 100%",
            "    log: rec/logs/test.log",
            "✗ slow  timed out after 5s (5.0s, 2 attempts)",
            "- deploy  skipped (a need did not succeed)",
            "⊘ lead  not needed (join `page-ready` had what it needed, 0.2s)",
        ])
    }

    @Test func tasksCancelledBeforeTheyStartedShareOneLinePerFrame() {
        var live = LiveState()
        _ = live.apply(started())
        for name in ["a", "b", "c", "d"] {
            #expect(live.apply(finished(name, .cancelled, attempt: 0) { $0.reason = "signal" }).isEmpty)
        }
        #expect(live.collapsedLines().map(\.description) == ["⊘ 4 tasks cancelled before they started: a, b, c, …"])
        #expect(live.collapsedLines().isEmpty)
        _ = live.apply(finished("e", .cancelled, attempt: 0))
        #expect(live.collapsedLines().map(\.description) == ["⊘ e  cancelled before it started"])
        #expect(live.finishedTasks == 5)
    }

    @Test func joinBlocksAreThePlainReportersBlocks() {
        let join = RunEvent.JoinCompleted(
            join: "page-ready", status: .succeeded, members: 3, succeeded: 2, required: 3, timedOut: true, duration: 2,
            missing: ["lead-track"], report: [(key: "original-track.outputs.path", value: "cache/original.mp3")])
        let (_, above) = state([started(), event(at: 2, .joinCompleted(join))])
        #expect(above == [
            "◆ join page-ready timed out: 2/3 succeeded (3 needed) after 2.0s",
            "    missing: lead-track",
            "    original-track.outputs.path = cache/original.mp3",
        ])
        let block = PlainReporter.joinBlock(join, valueWidth: 200)
        #expect(above == ["◆ join " + block.head] + block.details)
    }

    @Test func theSummaryCountsStatusesNamesTheSlowestAndTheFailed() {
        let (_, above) = state([
            started("nightly"),
            finished("a", .succeeded, duration: 1),
            finished("b", .succeeded, duration: 7),
            finished("c", .failed, duration: 3) { $0.log = .init(path: "rec/logs/c.log", offsetInRecord: 0) },
            finished("d", .succeeded, duration: 4),
            finished("e", .skipped, attempt: 0),
            runFinished(at: 9.5, duration: 9.5, exitCode: 1, counts: [(.succeeded, 3), (.failed, 1), (.skipped, 1)]),
        ])
        #expect(Array(above.suffix(6)) == [
            "",
            "✗ nightly failed in 9.5s (exit 1)",
            "  3 succeeded · 1 failed · 1 skipped",
            "  slowest: b 7.0s, d 4.0s, c 3.0s",
            "  failed: c — rec/logs/c.log",
            "  record: rec",
        ])
    }
}

@Suite struct LiveFrameScreenTests {
    private func lines(_ texts: [String]) -> [StyledLine] { texts.map { StyledLine($0) } }

    @Test func framesRedrawInPlaceInOneBufferAndTheCursorComesBack() {
        var screen = LiveScreen(style: plain, drawsRegion: true)
        let first = screen.frame(above: [], region: lines(["header", "  a"]), columns: 60)
        #expect(first == "\u{1B}[?25l\rheader\u{1B}[K\n  a\u{1B}[K\n\u{1B}[J")
        let second = screen.frame(above: lines(["✓ a  1.0s"]), region: lines(["header"]), columns: 60)
        #expect(second == "\u{1B}[2A\r✓ a  1.0s\u{1B}[K\nheader\u{1B}[K\n\u{1B}[J")
        let last = screen.close(above: lines(["summary"]), columns: 60)
        #expect(last == "\u{1B}[1A\rsummary\u{1B}[K\n\u{1B}[J\u{1B}[?25h")
    }

    @Test func linesAreCutOneColumnShortOfTheWidth() {
        var screen = LiveScreen(style: plain, drawsRegion: true)
        let bytes = screen.frame(above: [], region: lines([String(repeating: "x", count: 80)]), columns: 20)
        #expect(bytes.contains(String(repeating: "x", count: 18) + "…\u{1B}[K"))
    }

    @Test func aNarrowedTerminalCountsTheRowsItsReflowedLinesTake() {
        var screen = LiveScreen(style: plain, drawsRegion: true)
        _ = screen.frame(above: [], region: lines([String(repeating: "x", count: 70), "short"]), columns: 80)
        #expect(screen.rowsOnScreen(columns: 80) == 2)
        #expect(screen.rowsOnScreen(columns: 30) == 4)  // 70 columns take 3 rows at 30
        let next = screen.frame(above: [], region: lines(["short"]), columns: 30)
        #expect(next.hasPrefix("\u{1B}[4A\r"))
    }

    @Test func withoutATerminalThereAreNoEscapesAndNoRegion() {
        var screen = LiveScreen(style: plain, drawsRegion: false)
        let bytes = screen.frame(above: lines(["✓ a  1.0s", String(repeating: "y", count: 300)]), region: lines(["header"]), columns: 0)
        #expect(bytes == "✓ a  1.0s\n" + String(repeating: "y", count: 300) + "\n")
        #expect(screen.close(above: lines(["done"]), columns: 0) == "done\n")
    }
}

@Suite struct LiveFrameReporterTests {
    /// Not a terminal: the tty view writes its lasting lines as plain text, no escapes.
    @Test func toAFileTheViewWritesFinishedTasksJoinsAndTheSummaryWithoutEscapes() throws {
        let path = NSTemporaryDirectory() + "live-\(UUID().uuidString).txt"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(descriptor >= 0)
        let reporter = LiveTerminalReporter(descriptor: descriptor) { $0 == "TERM" ? "xterm-256color" : nil }
        for item in [started(members: 1), startedTask("a", at: 0), progress("a", 50), finished("a", .succeeded, duration: 0.5),
                     runFinished(duration: 0.6, counts: [(.succeeded, 1)])] {
            reporter.report(item)
        }
        reporter.finish()
        close(descriptor)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text == "✓ a  0.5s\n\n✓ downloads succeeded in 0.6s (exit 0)\n  1 succeeded\n  slowest: a 0.5s\n  record: rec\n")
    }
}

@Suite struct LiveFrameTerminalTextTests {
    @Test(arguments: [("plain", 5), ("█░", 2), ("日本", 4), ("e\u{301}", 1), ("🚀", 2), ("⠋ ✓ ✗", 5), ("", 0)])
    func widthCountsColumns(text: String, columns: Int) {
        #expect(TerminalText.width(text) == columns)
    }

    @Test(arguments: [("downloads", 5, "down…"), ("日本語", 4, "日…"), ("short", 5, "short"), ("abc", 0, "")])
    func truncationCountsColumnsAndMarksTheCut(text: String, columns: Int, expected: String) {
        #expect(TerminalText.truncated(text, to: columns) == expected)
    }

    @Test(arguments: [
        ("\u{1B}[31mred\u{1B}[0m", "red"), ("10%\r50%\r100%", "100%"), ("a\tb", "a b"), ("bell\u{07}!", "bell!"),
        ("\u{1B}]0;title\u{07}text", "text"), ("crlf\r", "crlf"), ("\u{1B}[2J\u{1B}[Hhome", "home"), ("ok", "ok"),
    ])
    func sanitizingKeepsWhatATerminalWouldShowAndNothingThatSteersIt(text: String, expected: String) {
        #expect(TerminalText.sanitized(text) == expected)
    }

    @Test func colourIsAddedAfterCuttingSoCodesAreNeverCutOrCounted() {
        var line = StyledLine("✓ ", .success)
        line.append("a-long-task-name", .bold)
        line.append("  12.5s", .dim)
        let coloured = TerminalStyle(usesColor: true).render(line, columns: 10)
        #expect(coloured == "\u{1B}[32m✓ \u{1B}[0m\u{1B}[1ma-long-\u{1B}[0m…")
        #expect(plain.render(line, columns: 10) == "✓ a-long-…")
        #expect(!plain.render(line, columns: nil).contains("\u{1B}"))
    }

    @Test func colourNeedsATerminalAndNoNoColor() {
        #expect(!TerminalStyle.colorAllowed(descriptor: -1) { _ in nil })
    }
}
