import Foundation
import Testing
@testable import FlowrunRecord
#if canImport(Glibc)
import Glibc
#endif

/// Runs named to the microsecond (`20261125-100000.250000-4f1c09a2b7d3`)
/// sort by name, within one second too: ordering and pruning them opens no
/// record. A second that holds an id from before microseconds (the second
/// flowrun was upgraded in) goes by every one of its runs' first event, as
/// all seconds did before (`RunHistoryOldestTests`).
@Suite struct RunHistoryMicrosecondOrderTests {
    /// A record folder of runs, each with a first event at the given time
    /// and, if `ended`, a summary; removed afterwards.
    private final class Folder {
        let path: String
        let descriptor: Int32
        init(_ runs: [(id: String, time: String)], ended: Bool = false) throws {
            var template = Array((FileManager.default.temporaryDirectory.path + "/flowrun-microsecond.XXXXXX").utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
            path = String(cString: try #require(made))
            for run in runs {
                try #require(mkdir(path + "/" + run.id, 0o700) == 0)
                try "{\"event\":\"run_started\",\"time\":\"\(run.time)\"}\n".write(toFile: path + "/" + run.id + "/events.jsonl", atomically: false, encoding: .utf8)
                if ended { try "{}".write(toFile: path + "/" + run.id + "/summary.json", atomically: false, encoding: .utf8) }
            }
            descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            try #require(descriptor >= 0)
        }
        deinit {
            close(descriptor)
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// Five runs of 10:00:00 named to the microsecond, whose first events
    /// say the opposite order (were they read, the order would follow
    /// them), one run of the second before and one of the second after.
    static let second = [
        "20261125-100000.000001-ffffffffffff", "20261125-100000.000002-000000000000", "20261125-100000.250000-777777777777",
        "20261125-100000.250001-000000000001", "20261125-100000.999999-000000000000",
    ]
    static let early = "20261125-095959.999999-ffffffffffff"
    static let late = "20261125-100001.000000-000000000000"
    static let reversedTimes = ["2026-11-25T10:00:00.900Z", "2026-11-25T10:00:00.700Z", "2026-11-25T10:00:00.500Z", "2026-11-25T10:00:00.300Z", "2026-11-25T10:00:00.100Z"]

    static func runs() -> [(id: String, time: String)] {
        Array(zip(second, reversedTimes)) + [(early, "2026-11-25T10:00:01.500Z"), (late, "2026-11-25T09:59:58.000Z")]
    }

    @Test func aSecondOfRunsNamedToTheMicrosecondGoesByName() throws {
        let folder = try Folder(Self.runs())
        let ids = RunHistory.unorderedRunIDs(in: folder.descriptor, ownedBy: geteuid())
        #expect(Set(ids) == Set(Self.second + [Self.early, Self.late]))
        let byName = [Self.early] + Self.second + [Self.late]
        #expect(RunHistory.chronological(ids.shuffled(), in: folder.descriptor) == byName)
        #expect(RunHistory.runIDs(in: folder.descriptor, ownedBy: geteuid()) == byName)
        for count in 0...ids.count {
            #expect(RunHistory.oldest(count, of: ids.shuffled(), in: folder.descriptor) == Array(byName.prefix(count)), "\(count)")
        }
    }

    /// `--keep 3` in a folder of one second's ended runs: this run and the
    /// two newest by name stay, whatever their first events say.
    @Test func pruningASecondOfRunsNamedToTheMicrosecondKeepsTheNewestByName() throws {
        let folder = try Folder(Array(zip(Self.second, Self.reversedTimes)), ended: true)
        let current = "20261125-100000.999999-ffffffffffff"
        try #require(mkdir(folder.path + "/" + current, 0o700) == 0)
        let problems = RecordPruning.prune(base: folder.descriptor, shownAs: folder.path, keep: 3, current: current)
        #expect(problems.isEmpty, "\(problems)")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { RunHistory.isRunID($0) }.sorted()
        #expect(left == [Self.second[3], Self.second[4], current])
    }

    /// A second with an id from before microseconds: all of its runs by
    /// their first event (the old id's place by name is before every new
    /// one of its second, `-` before `.`); the other seconds still by name.
    @Test func aSecondWithAnIdFromBeforeMicrosecondsGoesByFirstEvents() throws {
        let old = "20261125-100000-0000000000000009"
        let folder = try Folder([
            (old, "2026-11-25T10:00:00.500Z"),
            ("20261125-100000.100000-000000000000", "2026-11-25T10:00:00.900Z"),
            ("20261125-100000.900000-000000000000", "2026-11-25T10:00:00.100Z"),
            // The next second, all named to the microsecond: by name, its first events unread.
            ("20261125-100001.100000-000000000000", "2026-11-25T10:00:01.900Z"),
            ("20261125-100001.900000-000000000000", "2026-11-25T10:00:01.100Z"),
        ])
        let ids = RunHistory.unorderedRunIDs(in: folder.descriptor, ownedBy: geteuid())
        #expect(ids.sorted().first == old)
        let expected = [
            "20261125-100000.900000-000000000000", old, "20261125-100000.100000-000000000000",
            "20261125-100001.100000-000000000000", "20261125-100001.900000-000000000000",
        ]
        #expect(RunHistory.chronological(ids, in: folder.descriptor) == expected)
        for count in 0...ids.count {
            #expect(Set(RunHistory.oldest(count, of: ids, in: folder.descriptor)) == Set(expected.prefix(count)), "\(count)")
        }
    }
}
