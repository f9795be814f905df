@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunRecord
@testable import FlowrunEngine
import FlowrunTestSupport
import Testing

@Suite struct RuntimeValuesStdoutCaptureTests {
    static let sample = Array("""
        first é line
        ::progress::10
          ::progress:: 55.5 \r
        c::progress::3
        ::progress::101
        ::progress::-1
        ::progress::x
        ::progress::
        ::progress::7.
        \(String(repeating: " ", count: 120))::progress::20
        \u{1F600}::progress
        ::progress::100
        end
        """.utf8) + [0x0A]
    static let sampleStash = """
        first é line
        c::progress::3
        ::progress::101
        ::progress::-1
        ::progress::x
        ::progress::
        ::progress::7.
        \(String(repeating: " ", count: 120))::progress::20
        \u{1F600}::progress
        end
        """
    static let sampleProgress: [Double] = [10, 55.5, 100]

    /// Feeds `bytes` cut at `cuts`; returns every progress report and the capture.
    func feed(_ bytes: [UInt8], cuts: [Int], limit: Int = StdoutCapture.defaultLimit) -> (progress: [Double], capture: StdoutCapture) {
        var capture = StdoutCapture(limit: limit)
        var progress: [Double] = []
        var start = 0
        for cut in cuts + [bytes.count] {
            if let value = capture.append(bytes[start..<cut]) { progress.append(value) }
            start = cut
        }
        if let value = capture.finish() { progress.append(value) }
        return (progress, capture)
    }

    @Test func progressLinesAreReportedAndLeftOut() {
        let (progress, capture) = feed(Self.sample, cuts: [])
        #expect(capture.stash == Self.sampleStash)
        #expect(progress == [100])  // one chunk: its last report
        #expect(capture.byteCount == Self.sample.count)
        #expect(!capture.isTruncated)
    }

    @Test func byteByByteEveryProgressLineIsReported() {
        let (progress, capture) = feed(Self.sample, cuts: Array(1..<Self.sample.count))
        #expect(capture.stash == Self.sampleStash)
        #expect(progress == Self.sampleProgress)
    }

    @Test func everyPairOfCutsGivesTheSameResult() {
        let count = Self.sample.count
        for first in 0...count {
            for second in first...count {
                let (progress, capture) = feed(Self.sample, cuts: [first, second])
                #expect(capture.stash == Self.sampleStash, "cuts \(first), \(second)")
                // Each chunk reports its last progress line: a subsequence of all of them, ending with the last.
                #expect(progress.last == 100 && isSubsequence(progress, of: Self.sampleProgress), "cuts \(first), \(second): \(progress)")
            }
        }
    }

    @Test func everyCutWithASmallWindow() {
        // The window is smaller than the sample, so cuts also land in the window's compaction.
        let limit = 40
        let expectedBytes = Array(Self.sampleStash.utf8) + [0x0A]
        let expected = String(decoding: expectedBytes.suffix(limit).dropLast(), as: UTF8.self)
        for cut in 0...Self.sample.count {
            let (progress, capture) = feed(Self.sample, cuts: [cut], limit: limit)
            #expect(capture.stash == expected, "cut \(cut)")
            #expect(capture.isTruncated)
            #expect(progress.last == 100)
        }
    }

    @Test func aProgressLineWithoutAFinalNewlineIsReportedByFinish() {
        var capture = StdoutCapture()
        #expect(capture.append(Array("done\n::progress::100".utf8)) == nil)
        #expect(capture.stash == "done")  // the unfinished progress line is already left out
        #expect(capture.finish() == 100)
        #expect(capture.stash == "done")
    }

    @Test func rawBuffersFromReadAreTakenDirectly() {
        var capture = StdoutCapture()
        let bytes = Array("x\n::progress::5\ny".utf8)
        #expect(bytes.withUnsafeBytes { capture.append($0) } == 5)
        #expect(capture.stash == "x\ny")
    }

    @Test func anUnfinishedOrdinaryLastLineIsPartOfTheStash() {
        var capture = StdoutCapture()
        _ = capture.append(Array("a\nno newline".utf8))
        #expect(capture.finish() == nil)
        #expect(capture.stash == "a\nno newline")
    }

    @Test(arguments: [("", ""), ("a\n", "a"), ("a\n\n", "a\n"), ("a\r\n", "a"), ("a\r", "a\r"), ("\n", ""), ("a", "a")])
    func oneTrailingLineEndingIsRemoved(output: String, stash: String) {
        var capture = StdoutCapture()
        _ = capture.append(Array(output.utf8))
        _ = capture.finish()
        #expect(capture.stash == stash)
    }

    @Test func theStashKeepsTheLastBytesAndDropsAPartialCharacterAtItsStart() {
        var capture = StdoutCapture(limit: 8)
        _ = capture.append(Array("0123456789".utf8))
        #expect(capture.stash == "23456789")
        _ = capture.append(Array("ab😀c\n".utf8))  // the last 8 bytes: "ab", 4 of 😀, "c\n"
        #expect(capture.stash == "ab😀c")
        _ = capture.append(Array("def".utf8))  // now the window starts inside 😀: its tail bytes are dropped
        #expect(capture.stash == "c\ndef")
        #expect(capture.isTruncated)
    }

    @Test func invalidUTF8BecomesReplacementCharacters() {
        var capture = StdoutCapture()
        _ = capture.append([0x61, 0xFF, 0x62, 0xE2, 0x82])
        #expect(capture.stash == "a\u{FFFD}b\u{FFFD}")
    }

    @Test func aFiftyMegabyteStreamKeepsMemoryFlatAndTheLastMebibyte() {
        var capture = StdoutCapture()
        var expected: [UInt8] = []  // the stash bytes (progress lines excluded), for checking
        expected.reserveCapacity(52 << 20)
        var chunk: [UInt8] = []
        var progress: [Double] = []
        var line = 0
        var generator = SeededGenerator(seed: 50)
        var total = 0
        while total < 50 << 20 {
            line += 1
            let text: String
            if line % 997 == 0 {
                text = "::progress::\(line % 101)\n"
            } else {
                text = "line \(line): " + String(repeating: "x", count: Int(generator.next() % 200)) + "\n"
                expected += text.utf8
            }
            chunk += text.utf8
            total += text.utf8.count
            if chunk.count >= 65_536 {
                // Cut at an arbitrary place, not at a line end.
                let cut = Int(generator.next() % UInt64(chunk.count))
                if let value = capture.append(chunk[..<cut]) { progress.append(value) }
                if let value = capture.append(chunk[cut...]) { progress.append(value) }
                chunk.removeAll(keepingCapacity: true)
                #expect(capture.storageCapacity <= 2 * StdoutCapture.defaultLimit + 16_384)
            }
        }
        if let value = capture.append(chunk) { progress.append(value) }
        #expect(capture.finish() == nil)
        #expect(capture.byteCount == total)
        #expect(capture.isTruncated)
        #expect(capture.storageCapacity <= 2 * StdoutCapture.defaultLimit + 16_384)
        #expect(!progress.isEmpty && progress.allSatisfy { (0...100).contains($0) })
        let tail = expected.suffix(StdoutCapture.defaultLimit).dropLast()
        #expect(Array(capture.stash.utf8) == Array(tail))
    }

    @Test func aFiftyMegabyteLineWithoutNewlinesStreamsThrough() {
        var capture = StdoutCapture()
        let chunk = [UInt8](repeating: UInt8(ascii: "y"), count: 65_521)
        var total = 0
        while total < 50 << 20 {
            #expect(capture.append(chunk) == nil)
            total += chunk.count
        }
        _ = capture.append(Array("::progress::50\n".utf8))  // the end of the long line, not a progress line
        #expect(capture.storageCapacity <= 2 * StdoutCapture.defaultLimit + 16_384)
        let stash = capture.stash
        #expect(stash.utf8.count == StdoutCapture.defaultLimit - 1)
        #expect(stash.hasSuffix("yyy::progress::50"))
    }

    @Test(arguments: [
        ("::progress::0", 0.0), ("::progress::100", 100), ("::progress::42", 42), ("::progress::37.5", 37.5),
        (" \t::progress::  7 \r", 7), ("::progress::007", 7), ("::progress::100.0", 100),
    ])
    func progressLines(line: String, value: Double) {
        #expect(Array(line.utf8).withUnsafeBufferPointer(StdoutCapture.progress(in:)) == value)
    }

    @Test(arguments: [
        "::progress::", "::progress::101", "::progress::100.1", "::progress::-1", "::progress::+5", "::progress::5%",
        "::progress::1e2", "::progress::.5", "::progress::5.", "::progress::5 5", "::Progress::5", ":progress::5",
        "x::progress::5", "::progress::5 x", "::progress:5", "::progress::٣",
    ])
    func notProgressLines(line: String) {
        #expect(Array(line.utf8).withUnsafeBufferPointer(StdoutCapture.progress(in:)) == nil)
    }
}

/// True when `small` appears in `large` in order (not necessarily adjacent).
private func isSubsequence(_ small: [Double], of large: [Double]) -> Bool {
    var iterator = large.makeIterator()
    return small.allSatisfy { value in
        while let next = iterator.next() { if next == value { return true } }
        return false
    }
}
