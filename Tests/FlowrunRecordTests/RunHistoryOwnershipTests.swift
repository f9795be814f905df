import Foundation
import Testing
@testable import FlowrunRecord
#if canImport(Glibc)
import Glibc
#endif

/// Whose records count (SPEC §11, issue 32): run folders and a `latest` of
/// another user are not runs of this record — not listed, not the latest,
/// not resolved, not pruned and not counted toward `keep`. Needs root to
/// give entries to uid 65534 (CI runs as root).
@Suite struct RunHistoryOwnershipTests {
    static let other: uid_t = 65534
    static let mine = ["20261125-100000-0000000000000001", "20261125-100000-0000000000000002"]
    static let theirs = "29991231-235959-0123456789abcdef"

    /// A record folder with two runs of ours, one newer of uid 65534, and
    /// `latest -> theirs` owned by uid 65534; removed afterwards.
    private final class Folder {
        let path: String
        init() throws {
            try #require(geteuid() == 0, "giving entries to another user needs root (CI runs as root)")
            var template = Array((FileManager.default.temporaryDirectory.path + "/flowrun-owners.XXXXXX").utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
            path = String(cString: try #require(made))
            for id in RunHistoryOwnershipTests.mine + [RunHistoryOwnershipTests.theirs] {
                try #require(mkdir(path + "/" + id, 0o700) == 0)
            }
            try #require(chown(path + "/" + RunHistoryOwnershipTests.theirs, RunHistoryOwnershipTests.other, RunHistoryOwnershipTests.other) == 0)
            try #require(symlink(RunHistoryOwnershipTests.theirs, path + "/latest") == 0)
            try #require(lchown(path + "/latest", RunHistoryOwnershipTests.other, RunHistoryOwnershipTests.other) == 0)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    @Test func anotherUsersRunAndLatestAreNotThisRecords() throws {
        let folder = try Folder()
        let history = try RunHistory(path: folder.path)
        #expect(history.owner == geteuid())
        #expect(history.runIDs() == Self.mine)
        #expect(history.latestID() == Self.mine[1])
        #expect(try history.resolve(nil) == Self.mine[1])
        #expect(throws: RunHistory.Problem.self, "a prefix of theirs names nothing of ours") { try history.resolve("2999") }
        do {
            _ = try history.resolve(Self.theirs)
            Issue.record("their run resolved")
        } catch {
            #expect(error.description == "run \(Self.theirs) in \(folder.path) belongs to uid 65534, not to you (uid 0): flowrun reads only its owner's runs (SECURITY.md)")
        }
        #expect(throws: RunHistory.Problem.self) { try RecordedRun.read(Self.theirs, in: history) }
        #expect(throws: ResumeSource.Problem.self) { try ResumeSource.read(Self.theirs, in: history) }
    }

    /// Root reading a record folder of another user's sees that user's
    /// runs (not root's own there), and still resumes none of them: resume
    /// would run their workflow as root.
    @Test func rootReadsTheRecordOfTheFoldersOwnerButResumesOnlyItsOwn() throws {
        let folder = try Folder()
        try #require(chown(folder.path, Self.other, Self.other) == 0)
        let history = try RunHistory(path: folder.path)
        #expect(history.owner == Self.other)
        #expect(history.runIDs() == [Self.theirs])
        #expect(history.latestID() == Self.theirs)
        #expect(try RecordedRun.read(Self.theirs, in: history).id == Self.theirs)
        do {
            _ = try ResumeSource.read(Self.theirs, in: history)
            Issue.record("root resumed another user's record")
        } catch {
            #expect(error.description.hasPrefix("cannot resume \(Self.theirs): its record \(folder.path)/\(Self.theirs) belongs to uid 65534, not to you (uid 0)"))
        }
    }

    /// `keep` 2 keeps both of ours (theirs, newer, does not count); `keep` 1
    /// keeps only this run. Theirs is never removed.
    @Test func pruningCountsAndRemovesOnlyOurs() throws {
        let folder = try Folder()
        let base = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(base) }
        // Old enough not to be a run starting up.
        for id in Self.mine {
            var times = [timespec(tv_sec: 1, tv_nsec: 0), timespec(tv_sec: 1, tv_nsec: 0)]
            utimensat(AT_FDCWD, folder.path + "/" + id, &times, 0)
        }
        #expect(RecordPruning.prune(base: base, shownAs: folder.path, keep: 2, current: Self.mine[1]).isEmpty)
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(left == (Self.mine + [Self.theirs, "latest"]).sorted(), "keep 2 counts our two, not theirs")
        #expect(RecordPruning.prune(base: base, shownAs: folder.path, keep: 1, current: Self.mine[1]).isEmpty)
        // Ours removed is kept emptied as the next run's folder (`RecordPruning.spareName`).
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [Self.mine[1], Self.theirs, "latest", RecordPruning.spareName].sorted())
    }
}
