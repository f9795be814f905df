import Foundation
import Testing
@testable import FlowrunEvents
@testable import FlowrunRecord
#if canImport(Glibc)
import Glibc
#endif

/// Pruning keeps the first record it empties as `.flowrun-spare`, and the
/// next record is that folder renamed (no `mkdir`, no `rmdir`); a record
/// makes `logs/` and `outputs/` only when a task needs them. A spare is
/// taken only when it is an empty, private folder of the user's own: never
/// a link, never one with something in it, never one others may enter.
@Suite struct RecordSpareFolderTests {
    private final class Base {
        let path: String
        init() throws {
            var template = Array((FileManager.default.temporaryDirectory.path + "/flowrun-spare.XXXXXX").utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
            path = String(cString: try #require(made))
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    private static func inode(_ path: String) -> UInt64? {
        var info = stat()
        return lstat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    private static func ids(_ list: [String]) -> (RunStart) -> String {
        var iterator = list.makeIterator()
        return { _ in iterator.next()! }
    }

    /// A run as pruning sees it: started (events.jsonl says when), ended (summary.json).
    private static func end(_ record: RunRecord) {
        record.report(RunEvent(elapsed: 0, .runStarted(.init(runID: record.runID, workflow: "w", path: record.directory, maxParallel: 1, members: 0))))
        record.finish()
        record.writeSummary { $0.bytes += Array("{}".utf8) }
    }

    @Test func aRecordHasNoLogsNorOutputsUntilATaskNeedsThem() throws {
        let base = try Base()
        let record = try RunRecord(baseDirectory: base.path)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: record.directory)) == ["events.jsonl"])
        // A task starting: its $FLOWRUN_OUTPUT's folder, then its log's shard.
        _ = record.outputPathForTask(record.outputFileName(index: 3, name: "t", attempt: 1))
        _ = record.logPathForFiles(index: 3, name: "t")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: record.directory)) == ["events.jsonl", "logs", "outputs"])
        for folder in ["logs", "logs/000", "outputs"] {
            var info = stat()
            #expect(stat(record.directory + "/" + folder, &info) == 0 && info.st_mode & 0o7777 == 0o700, "\(folder)")
        }
        #expect(record.failure == nil)
    }

    @Test func pruningKeepsOneEmptiedFolderThatTheNextRecordTakes() throws {
        let base = try Base()
        // Ended, its flowrun gone (the record let go: no lock held).
        let (firstDirectory, firstInode) = try {
            let first = try RunRecord(baseDirectory: base.path, makeRunID: Self.ids(["20261129-100000-0000000000000001"]))
            Self.end(first)
            return (first.directory, Self.inode(first.directory))
        }()
        let second = try RunRecord(baseDirectory: base.path, makeRunID: Self.ids(["20261129-100001-0000000000000002"]))
        Self.end(second)
        #expect(second.pruneOlderRecords(keeping: 1).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: firstDirectory))
        #expect(Self.inode(base.path + "/" + RecordPruning.spareName) == firstInode, "the pruned folder is the spare")
        #expect(try FileManager.default.contentsOfDirectory(atPath: base.path + "/" + RecordPruning.spareName).isEmpty)
        let third = try RunRecord(baseDirectory: base.path, makeRunID: Self.ids(["20261129-100002-0000000000000003"]))
        #expect(Self.inode(third.directory) == firstInode, "the next record is the spare, renamed")
        #expect(!FileManager.default.fileExists(atPath: base.path + "/" + RecordPruning.spareName))
        var info = stat()
        #expect(stat(third.directory, &info) == 0 && info.st_mode & 0o7777 == 0o700 && info.st_uid == geteuid())
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: third.directory)) == ["events.jsonl"])
        // Only runs are listed: the spare is not one.
        let history = try RunHistory(path: base.path)
        #expect(history.runIDs() == [second.runID, third.runID])
    }

    @Test(arguments: ["link", "full", "open"])
    func aSpareThatIsNotAnEmptyPrivateFolderIsLeftAlone(_ kind: String) throws {
        let base = try Base()
        let spare = base.path + "/" + RecordPruning.spareName
        switch kind {
        case "link":
            try FileManager.default.createDirectory(atPath: base.path + "/elsewhere", withIntermediateDirectories: false)
            #expect(symlink(base.path + "/elsewhere", spare) == 0)
        case "full":
            #expect(mkdir(spare, 0o700) == 0)
            try "planted".write(toFile: spare + "/file", atomically: false, encoding: .utf8)
        default:
            #expect(mkdir(spare, 0o700) == 0)
            #expect(chmod(spare, 0o755) == 0)
        }
        let before = Self.inode(spare)
        let record = try RunRecord(baseDirectory: base.path)
        #expect(Self.inode(record.directory) != before, "a \(kind) spare was taken")
        #expect(Self.inode(spare) == before, "the \(kind) spare was moved")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: record.directory)) == ["events.jsonl"])
    }
}
