import Foundation
import Testing
@testable import FlowrunCore

/// The watch lets an attempt skip looking for its `$FLOWRUN_OUTPUT` file
/// only when nothing was written in `outputs/` while it ran; everything else
/// (a write, a rename into the folder, the folder replaced) must say "look".
/// Serialized: SIGIO is one signal for the whole process, so one test's
/// writes would count for another's watch.
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

        /// A watch with whatever arrived before it (an earlier test's writes) read.
        func watch() throws -> OutputFilesWatch {
            let watch = try #require(OutputFilesWatch(runDirectory: path, outputsDirectory: outputs), "dnotify is available on Linux")
            _ = watch.mayHaveWritten(since: 0)
            return watch
        }
    }

    @Test func onlyAnAttemptDuringWhichSomethingWasWrittenLooks() throws {
        let folder = try RunFolder()
        defer { folder.remove() }
        let watch = try folder.watch()

        let quiet = watch.stamp
        #expect(!watch.mayHaveWritten(since: quiet), "nothing was written")

        let writer = watch.stamp
        try "v=1\n".write(toFile: folder.outputs + "/task.1", atomically: false, encoding: .utf8)
        #expect(watch.mayHaveWritten(since: writer), "a file was created in outputs/")

        let appender = watch.stamp
        let handle = try #require(FileHandle(forWritingAtPath: folder.outputs + "/task.1"))
        handle.seekToEndOfFile()
        handle.write(Data("w=2\n".utf8))
        try handle.close()
        #expect(watch.mayHaveWritten(since: appender), "a file in outputs/ was written to")

        let mover = watch.stamp
        try "v=3\n".write(toFile: folder.path + "/moved.tmp", atomically: false, encoding: .utf8)
        try FileManager.default.moveItem(atPath: folder.path + "/moved.tmp", toPath: folder.outputs + "/task.2")
        #expect(watch.mayHaveWritten(since: mover), "a file was renamed into outputs/")

        #expect(!watch.mayHaveWritten(since: watch.stamp), "quiet again")
    }

    /// Once a task replaces `outputs/`, the watch is on a folder nobody writes
    /// to any more: from then on every attempt looks.
    @Test func aReplacedOutputsFolderMakesEveryAttemptLook() throws {
        let folder = try RunFolder()
        defer { folder.remove() }
        let watch = try folder.watch()

        try FileManager.default.moveItem(atPath: folder.outputs, toPath: folder.path + "/outputs.old")
        try FileManager.default.createDirectory(atPath: folder.outputs, withIntermediateDirectories: false)
        #expect(watch.mayHaveWritten(since: watch.stamp))
        #expect(watch.mayHaveWritten(since: watch.stamp), "and stays so")
    }

    /// flowrun's own writes to the run folder (events.jsonl) are not outputs.
    @Test func writesToTheRunFolderItselfAreNotOutputs() throws {
        let folder = try RunFolder()
        defer { folder.remove() }
        _ = FileManager.default.createFile(atPath: folder.path + "/events.jsonl", contents: nil)
        let watch = try folder.watch()

        let stamp = watch.stamp
        let handle = try #require(FileHandle(forWritingAtPath: folder.path + "/events.jsonl"))
        handle.write(Data("{}\n".utf8))
        try handle.close()
        #expect(!watch.mayHaveWritten(since: stamp))
    }
}
