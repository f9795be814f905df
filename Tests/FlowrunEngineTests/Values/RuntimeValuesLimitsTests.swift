@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import FlowrunTestSupport
import Foundation
import Testing

/// The pieces behind "no value is cut, nothing overflows" (SPEC §2, §8):
/// the stdout spill, fan-out items read from it, the 1 MiB message, unique
/// member names, saturating duration arithmetic.
@Suite struct RuntimeValuesLimitsTests {
    private func scratchFile(_ name: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flowrun-values-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent(name).path
    }

    /// 3 MiB of lines with progress lines among them, fed in odd chunks past
    /// a 1 KiB window: the spill holds every byte but the progress lines,
    /// in order; the value's size counts them all, less the last newline.
    @Test(arguments: [1, 7, 4096, 65_537])
    func theSpillHoldsTheWholeOutputWithoutProgressLines(chunk: Int) throws {
        let path = try scratchFile("t.log.1.stdout")
        var expected: [UInt8] = []
        var input: [UInt8] = []
        for number in 0..<200_000 {
            let line = Array("line \(number)\n".utf8)
            expected += line
            input += line
            if number % 1000 == 0 { input += Array("::progress::\(number / 2000)\n".utf8) }
        }
        var capture = StdoutCapture(limit: 1024, spill: .init(path: path))
        var offset = 0
        while offset < input.count {
            let end = min(input.count, offset + chunk)
            _ = capture.append(input[offset..<end])
            offset = end
        }
        _ = capture.finish()
        #expect(capture.spilledPath == path)
        #expect(capture.spillProblem == nil)
        let written = try #require(FileManager.default.contents(atPath: path))
        #expect(written.count == expected.count)
        #expect(Array(written) == expected)
        #expect(capture.valueByteCount == expected.count - 1)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    /// Output within the window makes no file; an unfinished last line counts.
    @Test func shortOutputMakesNoSpillFile() throws {
        let path = try scratchFile("t.log.1.stdout")
        var capture = StdoutCapture(limit: 1024, spill: .init(path: path))
        _ = capture.append(Array("a\nb\r\nlast".utf8))
        _ = capture.finish()
        #expect(capture.spilledPath == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(capture.valueByteCount == 9)
        #expect(capture.stash == "a\nb\r\nlast")
    }

    /// A value of exactly the limit plus its `\r\n` fits the engine's window (limit + 2) whole.
    @Test func aValueOfExactlyTheLimitStaysWhole() throws {
        let path = try scratchFile("t.log.1.stdout")
        var capture = StdoutCapture(limit: 100 + 2, spill: .init(path: path))
        _ = capture.append(Array(repeating: UInt8(ascii: "x"), count: 100) + [0x0D, 0x0A])
        _ = capture.finish()
        #expect(capture.valueByteCount == 100)
        #expect(capture.stash.utf8.count == 100)
        #expect(capture.spilledPath == nil)
    }

    /// The spill is never written through an existing file or a planted link.
    @Test func theSpillRefusesAnExistingPath() throws {
        let path = try scratchFile("t.log.1.stdout")
        let target = path + ".target"
        #expect(FileManager.default.createFile(atPath: target, contents: Data("keep".utf8)))
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        var capture = StdoutCapture(limit: 8, spill: .init(path: path))
        _ = capture.append(Array("0123456789abcdef\n".utf8))
        _ = capture.finish()
        #expect(capture.spilledPath == nil)
        #expect(capture.spillProblem?.hasPrefix("cannot create \(path): ") == true)
        #expect(FileManager.default.contents(atPath: target) == Data("keep".utf8))
    }

    @Test func fanOutItemsFromAFileFollowTheTextRules() throws {
        let lines = try scratchFile("lines")
        try Data("a\n\n  \nb c\r\n last \nno newline".utf8).write(to: URL(fileURLWithPath: lines))
        #expect(try FanOutItems.parse(contentsOf: lines) == ["a", "b c", " last ", "no newline"])
        #expect(try FanOutItems.parse(contentsOf: lines) == FanOutItems.parse("a\n\n  \nb c\r\n last \nno newline"))

        let array = try scratchFile("array")
        try Data("  [\"x\", 1.50, {\"k\": [1, 2]}, null]\n".utf8).write(to: URL(fileURLWithPath: array))
        #expect(try FanOutItems.parse(contentsOf: array) == ["x", "1.50", "{\"k\":[1,2]}", "null"])

        let notArray = try scratchFile("broken")
        try Data("[not json\nsecond\n".utf8).write(to: URL(fileURLWithPath: notArray))
        #expect(try FanOutItems.parse(contentsOf: notArray) == ["[not json", "second"])

        #expect(throws: FanOutFileError.self) { try FanOutItems.parse(contentsOf: lines + ".missing") }
    }

    @Test func theOneMiBMessageNamesTheValueAndItsSize() throws {
        #expect(ValueLimit.message("tasks.list.stdout", size: 1_500_000) == "tasks.list.stdout is 1.4 MiB; values over 1 MiB can only feed a foreach")
        #expect(ValueLimit.mebibytes(1_048_577) == "1.0 MiB (1,048,577 bytes)")
        #expect(ValueLimit.mebibytes(200 << 20) == "200.0 MiB")
    }

    /// The renderer consults the context's whole size before the (cut) value.
    @Test func renderingAValuePastTheLimitFails() throws {
        struct Context: ExpressionContext {
            func value(of path: OperandPath) -> ExpressionValue? { .string("tail") }
            func byteCount(of path: OperandPath) -> Int? { path == .task("list", .stdout) ? 3 << 20 : nil }
        }
        let location = SourceLocation(file: "w.yaml", line: 3, column: 10)
        let operand = Operand(text: "tasks.list.stdout", path: .task("list", .stdout), location: location)
        let template = Template(source: "echo ${{ tasks.list.stdout }}", segments: [.text("echo "), .expression(.operand(operand), location)], location: location)
        #expect(throws: TemplateRenderError(location: location, message: "tasks.list.stdout is 3.0 MiB; values over 1 MiB can only feed a foreach")) {
            try TemplateRenderer.render(template, mode: .shell, in: Context())
        }
        let small = Operand(text: "item", path: .item, location: location)
        let fine = Template(source: "echo ${{ item }}", segments: [.text("echo "), .expression(.operand(small), location)], location: location)
        #expect(try TemplateRenderer.render(fine, mode: .shell, in: Context()) == "echo 'tail'")
        // A value held whole but longer than 1 MiB (a long item, a group's results) fails the same way.
        let big = ExpressionValues([.item: .string(String(repeating: "y", count: (1 << 20) + 1))])
        #expect(throws: TemplateRenderError(location: location, message: "item is 1.0 MiB (1,048,577 bytes); values over 1 MiB can only feed a foreach")) {
            try TemplateRenderer.render(fine, mode: .text, in: big)
        }
    }

    @Test func durationArithmeticSaturates() {
        let day = Duration.seconds(86_400)
        #expect(Duration.product(.seconds(1), .infinity, atMost: day) == day)
        #expect(Duration.product(.seconds(1), Foundation.pow(1000, 9999), atMost: day) == day)
        #expect(Duration.product(.zero, .infinity, atMost: day) == .zero)
        #expect(Duration.product(.milliseconds(1500), 2, atMost: day) == .seconds(3))
        #expect(Duration.seconds(Int64.max).nanoseconds == Int.max)
        #expect(Duration.seconds(-5).nanoseconds == 0)
        #expect(Duration.milliseconds(1500).nanoseconds == 1_500_000_000)
    }
}

extension RuntimeValuesLimitsTests {
    /// What the summary shows of a value too long to keep starts at a whole character.
    @Test func theTailOfALongValueStartsAtAWholeCharacter() {
        #expect(ValueLimit.tail("abcdef", bytes: 3) == "def")
        #expect(ValueLimit.tail("abc", bytes: 3) == "abc")
        #expect(ValueLimit.tail("xé中", bytes: 4) == "中")  // "é" is cut in half: dropped
        #expect(ValueLimit.tail("xé中", bytes: 5) == "é中")
    }
}

extension RuntimeValuesLimitsTests {
    /// The engine's capture: a window two bytes over the limit, spilling past
    /// the limit (newline included) — a value of exactly the limit stays whole
    /// in memory, one byte more is spilled whole.
    @Test(arguments: [(100, false), (101, true)])
    func theEngineSpillsEveryValuePastTheLimit(size: Int, spills: Bool) throws {
        let path = try scratchFile("t.log.1.stdout")
        var capture = StdoutCapture(limit: 102, spill: .init(path: path), spillAfter: 100)
        _ = capture.append(Array(repeating: UInt8(ascii: "x"), count: size) + [0x0A])
        _ = capture.finish()
        #expect(capture.valueByteCount == size)
        if spills {
            #expect(capture.spilledPath == path)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == size + 1)
        } else {
            #expect(capture.stash.utf8.count == size)
        }
    }
}
