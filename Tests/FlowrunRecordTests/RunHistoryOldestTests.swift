import Foundation
import Testing
@testable import FlowrunRecord
#if canImport(Glibc)
import Glibc
#endif

/// `RunHistory.oldest`, what pruning removes, for run ids from before
/// microseconds (32 characters, records users keep): the oldest runs by the
/// second in their id, and within the second that the cut falls in, by their
/// `run_started` time — read from that second's records only. Ids named to
/// the microsecond: `RunHistoryMicrosecondOrderTests`.
@Suite struct RunHistoryOldestTests {
    /// Runs named for one second, whose `run_started` times run the other
    /// way round from their random parts; one earlier, one later second.
    static let early = "20261125-095959-ffffffffffffffff"
    static let sameSecond = ["20261125-100000-0000000000000001", "20261125-100000-0000000000000002", "20261125-100000-0000000000000003"]
    static let late = "20261125-100001-0000000000000000"

    private final class Folder {
        let path: String
        let descriptor: Int32
        init() throws {
            var template = Array((FileManager.default.temporaryDirectory.path + "/flowrun-oldest.XXXXXX").utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
            path = String(cString: try #require(made))
            // In the second 10:00:00, …03 started first and …01 last.
            let times = ["2026-11-25T10:00:00.900Z", "2026-11-25T10:00:00.500Z", "2026-11-25T10:00:00.100Z"]
            for (id, time) in zip(RunHistoryOldestTests.sameSecond, times) {
                try #require(mkdir(path + "/" + id, 0o700) == 0)
                try "{\"event\":\"run_started\",\"time\":\"\(time)\"}\n".write(toFile: path + "/" + id + "/events.jsonl", atomically: false, encoding: .utf8)
            }
            for id in [RunHistoryOldestTests.early, RunHistoryOldestTests.late] { try #require(mkdir(path + "/" + id, 0o700) == 0) }
            descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            try #require(descriptor >= 0)
        }
        deinit {
            close(descriptor)
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    @Test func theCutInsideOneSecondFollowsTheStartTimes() throws {
        let folder = try Folder()
        let ids = RunHistory.unorderedRunIDs(in: folder.descriptor, ownedBy: geteuid())
        #expect(Set(ids) == Set(Self.sameSecond + [Self.early, Self.late]))
        // The two oldest: the earlier second's run, then …03, which started first in 10:00:00.
        #expect(Set(RunHistory.oldest(2, of: ids, in: folder.descriptor)) == [Self.early, Self.sameSecond[2]])
        #expect(Set(RunHistory.oldest(3, of: ids, in: folder.descriptor)) == [Self.early, Self.sameSecond[2], Self.sameSecond[1]])
        // A cut between seconds reads no record; none and all are plain.
        #expect(RunHistory.oldest(1, of: ids, in: folder.descriptor) == [Self.early])
        #expect(RunHistory.oldest(0, of: ids, in: folder.descriptor) == [])
        #expect(Set(RunHistory.oldest(9, of: ids, in: folder.descriptor)) == Set(ids))
        // The same order as the whole chronological listing.
        let listed = RunHistory.runIDs(in: folder.descriptor, ownedBy: geteuid())
        for count in 0...ids.count { #expect(Set(RunHistory.oldest(count, of: ids, in: folder.descriptor)) == Set(listed.prefix(count))) }
    }

    /// The start time is read from the line as flowrun writes it without a
    /// JSON parse; a first line written otherwise (keys in another order,
    /// spaces) is still read, by the parse.
    @Test func aFirstLineInAnotherShapeIsStillRead() throws {
        let folder = try Folder()
        let other = "20261125-100000-0000000000000004"
        try #require(mkdir(folder.path + "/" + other, 0o700) == 0)
        try "{ \"time\": \"2026-11-25T10:00:00.050Z\", \"event\": \"run_started\" }\n".write(
            toFile: folder.path + "/" + other + "/events.jsonl", atomically: false, encoding: .utf8)
        #expect(RunHistory.startTime(of: other, in: folder.descriptor) == RecordedRun.epochSeconds("2026-11-25T10:00:00.050Z"))
        #expect(RunHistory.startTime(of: Self.sameSecond[0], in: folder.descriptor) == RecordedRun.epochSeconds("2026-11-25T10:00:00.900Z"))
        let ids = RunHistory.unorderedRunIDs(in: folder.descriptor, ownedBy: geteuid())
        // …04 started first in 10:00:00 (50 ms), then …03 (100 ms).
        #expect(Set(RunHistory.oldest(3, of: ids, in: folder.descriptor)) == [Self.early, other, Self.sameSecond[2]])
    }
}
