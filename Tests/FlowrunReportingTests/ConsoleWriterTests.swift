@testable import FlowrunValues
@testable import FlowrunEvents
@testable import FlowrunReporting
import Foundation
import Synchronization
import Testing

/// The console writer on real pipes: it never blocks its callers, drops
/// whole lines only (and counts them), and stops at a reader that left.
@Suite struct ConsoleWriterTests {
    /// A pipe nobody reads fills up; then the writer's buffer fills up; then
    /// lines are dropped whole and counted. Read afterwards, every line that
    /// arrived is whole and in order, and arrived + dropped = written.
    @Test func aStalledReaderLosesWholeLinesOnlyAndEachIsCounted() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let writer = ConsoleWriter(descriptor: ends[1], capacity: 16 * 1024)
        let total = 5_000
        let started = ContinuousClock.now
        var refused = 0
        for number in 0..<total where !writer.write("line \(number) " + String(repeating: "x", count: 80) + "\n") {
            refused += 1
        }
        let writing = ContinuousClock.now - started
        #expect(writing < .seconds(2), "writing took \(writing): the writer blocked its caller")
        #expect(refused > 0, "nothing was dropped: the pipe and buffer hold \(total) lines?")

        // Now a reader comes; what was accepted arrives.
        let received = Mutex<[UInt8]>([])
        let reader = ends[0]
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let got = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                guard got > 0 else { break }
                received.withLock { $0 += buffer[0..<got] }
            }
            done.signal()
        }
        #expect(writer.drain(stall: .seconds(5), limit: .seconds(10)))
        close(ends[1])
        done.wait()
        close(ends[0])
        let lines = String(decoding: received.withLock { $0 }, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        let numbers = lines.compactMap { line -> Int? in
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[2].count == 80 else { return nil }
            return Int(fields[1])
        }
        #expect(numbers.count == lines.count, "a line arrived cut")
        #expect(numbers == numbers.sorted(), "lines arrived out of order")
        #expect(numbers.count + writer.dropped == total, "\(numbers.count) arrived + \(writer.dropped) dropped ≠ \(total)")
        #expect(writer.dropped == refused)
    }

    /// A reader that closed its end: the write fails with EPIPE on the
    /// writer's thread (which blocks SIGPIPE, so the process lives on), the
    /// writer stops, and everything not written is counted.
    @Test func aReaderThatLeftStopsTheWriterWithoutASignal() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        close(ends[0])
        defer { close(ends[1]) }
        let writer = ConsoleWriter(descriptor: ends[1])
        for number in 0..<10 { writer.write("line \(number)\n") }
        #expect(!writer.drain(stall: .seconds(5), limit: .seconds(10)))
        #expect(writer.failure == EPIPE)
        #expect(writer.dropped == 10)
        #expect(!writer.write("after\n"))
        #expect(writer.dropped == 11)
    }

    @Test(arguments: [
        ("plain", "plain"),
        ("a\nb", #"a\nb"#),
        ("\u{1B}[31mred\u{1B}[0m", #"\e[31mred\e[0m"#),
        ("bell\u{07}", #"bell\x07"#),
        ("nul\u{0}", #"nul\x00"#),
        ("cr\r::error::x", #"cr\r::error::x"#),
        ("del\u{7F}", #"del\x7f"#),
        ("c1\u{85}\u{9B}", #"c1\u{85}\u{9b}"#),
        ("tab\tstays", "tab\tstays"),
        ("東京 ✓", "東京 ✓"),
    ])
    func controlCharactersAreShownEscaped(_ text: String, _ shown: String) {
        #expect(TerminalText.escaped(text) == shown)
    }

    @Test func aNameNeverStartsAConsoleLineWithTwoColons() {
        #expect(TerminalText.escapedName("::error::x") == #"\x3a:error::x"#)
        #expect(TerminalText.escapedName("\n::error::x") == #"\n::error::x"#)
        #expect(TerminalText.escapedName("a::b") == "a::b")
    }

    /// The live view's per-task ring: the most recent lines, and how many fell out.
    @Test func recentLinesKeepTheNewestAndCountTheRest() {
        var recent = RecentLines()
        for number in 0..<(RecentLines.capacity + 10) { _ = recent.append("l\(number)") }
        #expect(recent.lines.count == RecentLines.capacity)
        #expect(recent.lines.first == "l10")
        #expect(recent.lines.last == "l\(RecentLines.capacity + 9)")
        #expect(recent.skipped == 10)
        #expect(RecentLines.cut(String(repeating: "y", count: 10_000)).utf8.count == RecentLines.lineBytes + "…".utf8.count)
    }
}
