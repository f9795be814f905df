import Foundation
import Testing
@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine

/// The watch lets an attempt skip looking for its `$FLOWRUN_OUTPUT` file
/// only when nothing was written in `outputs/` while it ran; everything else
/// (a write, a rename into the folder, the folder replaced) must say "look".
/// Serialized: SIGIO is one signal for the whole process, so one test's
/// writes would count for another's watch.
///
/// flowrun blocks SIGIO before it starts any thread, so every notice waits
/// for its signalfd. This test process's threads were started without it:
/// a notice may instead run the fallback handler on another thread, a
/// moment later. So a notice is waited for (`eventually`), and a stamp for
/// "nothing written" is taken once earlier notices have settled (`settled`).
@Suite(.serialized) struct OutputFilesWatchTests {
    /// A run folder with `outputs/` in it, removed afterwards.
    private struct RunFolder {
        let path: String
        var outputs: String { path + "/outputs" }

        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("flowrun-watch-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: path + "/outputs", withIntermediateDirectories: true)
        }

        func remove() { try? FileManager.default.removeItem(atPath: path) }

        func watch() throws -> OutputFilesWatch {
            try #require(OutputFilesWatch(runDirectory: path, outputsDirectory: outputs), "dnotify is available on Linux")
        }
    }

    /// A stamp taken once what arrived before (earlier writes' notices) was read.
    private func settled(_ watch: OutputFilesWatch) -> UInt64 {
        for _ in 0..<2 {
            usleep(50_000)
            _ = watch.mayHaveWritten(since: 0)
        }
        return watch.stamp
    }

    /// Whether the watch says "look" within 5 s.
    private func eventually(_ watch: OutputFilesWatch, since stamp: UInt64) -> Bool {
        for _ in 0..<500 {
            if watch.mayHaveWritten(since: stamp) { return true }
            usleep(10_000)
        }
        return false
    }

    @Test func onlyAnAttemptDuringWhichSomethingWasWrittenLooks() throws {
        let folder = try RunFolder()
        defer { folder.remove() }
        let watch = try folder.watch()

        let quiet = settled(watch)
        #expect(!watch.mayHaveWritten(since: quiet), "nothing was written")

        let writer = settled(watch)
        try "v=1\n".write(toFile: folder.outputs + "/task.1", atomically: false, encoding: .utf8)
        #expect(eventually(watch, since: writer), "a file was created in outputs/")

        let appender = settled(watch)
        let handle = try #require(FileHandle(forWritingAtPath: folder.outputs + "/task.1"))
        handle.seekToEndOfFile()
        handle.write(Data("w=2\n".utf8))
        try handle.close()
        #expect(eventually(watch, since: appender), "a file in outputs/ was written to")

        try "v=3\n".write(toFile: folder.path + "/moved.tmp", atomically: false, encoding: .utf8)
        let mover = settled(watch)
        try FileManager.default.moveItem(atPath: folder.path + "/moved.tmp", toPath: folder.outputs + "/task.2")
        #expect(eventually(watch, since: mover), "a file was renamed into outputs/")

        #expect(!watch.mayHaveWritten(since: settled(watch)), "quiet again")
    }

    /// Once a task replaces `outputs/`, the watch is on a folder nobody writes
    /// to any more: from then on every attempt looks.
    @Test func aReplacedOutputsFolderMakesEveryAttemptLook() throws {
        let folder = try RunFolder()
        defer { folder.remove() }
        let watch = try folder.watch()

        let replacer = settled(watch)
        try FileManager.default.moveItem(atPath: folder.outputs, toPath: folder.path + "/outputs.old")
        try FileManager.default.createDirectory(atPath: folder.outputs, withIntermediateDirectories: false)
        #expect(eventually(watch, since: replacer))
        #expect(watch.mayHaveWritten(since: settled(watch)), "and stays so")
    }

    /// flowrun's own writes to the run folder (events.jsonl) are not outputs.
    @Test func writesToTheRunFolderItselfAreNotOutputs() throws {
        let folder = try RunFolder()
        defer { folder.remove() }
        _ = FileManager.default.createFile(atPath: folder.path + "/events.jsonl", contents: nil)
        let watch = try folder.watch()

        let stamp = settled(watch)
        let handle = try #require(FileHandle(forWritingAtPath: folder.path + "/events.jsonl"))
        handle.write(Data("{}\n".utf8))
        try handle.close()
        usleep(100_000)
        #expect(!watch.mayHaveWritten(since: stamp))
    }
}
