import Foundation
import Testing
@testable import FlowrunEvents
@testable import FlowrunRecord
#if canImport(Glibc)
import Glibc
#endif

/// The run folder is made fresh (`mkdir`, a new id when one is taken), and
/// record file names are unique by construction (SPEC §7, §11).
@Suite struct RunRecordFolderTests {
    /// A base folder for run folders, removed afterwards.
    private final class Base {
        let path: String
        init() throws {
            var template = Array((FileManager.default.temporaryDirectory.path + "/flowrun-record.XXXXXX").utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
            path = String(cString: try #require(made))
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// An id that is taken by a link planted there (to a folder of the
    /// "attacker"'s) is not used: the record takes the next id, and nothing
    /// is written through the link.
    @Test func anIdTakenByAPlantedLinkIsSkipped() throws {
        let base = try Base()
        try FileManager.default.createDirectory(atPath: base.path + "/attacker", withIntermediateDirectories: false)
        #expect(symlink(base.path + "/attacker", base.path + "/20261125-000000-planted") == 0)
        var ids = ["20261125-000000-planted", "20261125-000000-fresh"].makeIterator()
        let record = try RunRecord(baseDirectory: base.path, makeRunID: { _ in ids.next()! })
        #expect(record.runID == "20261125-000000-fresh")
        #expect(record.directory == base.path + "/20261125-000000-fresh")
        record.report(RunEvent(elapsed: 0, .runStarted(.init(runID: record.runID, workflow: "w", path: record.directory, maxParallel: 1, members: 0))))
        record.finish()
        #expect(try FileManager.default.contentsOfDirectory(atPath: base.path + "/attacker").isEmpty)
        var info = stat()
        #expect(lstat(record.directory, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && info.st_mode & 0o7777 == 0o700)
        #expect(FileManager.default.fileExists(atPath: record.directory + "/events.jsonl"))
    }

    /// When every id tried is taken, the record is refused (the run exits 2), naming the folder.
    @Test func everyIdTakenIsRefused() throws {
        let base = try Base()
        try FileManager.default.createDirectory(atPath: base.path + "/taken", withIntermediateDirectories: false)
        #expect(throws: RunRecord.Failure.self) { try RunRecord(baseDirectory: base.path, makeRunID: { _ in "taken" }) }
        do {
            _ = try RunRecord(baseDirectory: base.path, makeRunID: { _ in "taken" })
        } catch {
            #expect(error.description == "cannot create a run folder in \(base.path): File exists")
        }
    }

    /// `YYYYMMDD-HHMMSS.uuuuuu-` and 12 hex digits (48 random bits); no two
    /// alike, and 1,000 made one after another sort by name in the order
    /// they were made (ids of one microsecond tie on their time part).
    @Test func runIdsSortByTheirStartToTheMicrosecond() {
        let ids = (0..<1000).map { _ in RunRecord.makeRunID() }
        for id in ids {
            #expect(id.wholeMatch(of: #/\d{8}-\d{6}\.\d{6}-[0-9a-f]{12}/#) != nil, "\(id)")
            #expect(id.utf8.count == RunHistory.runIDLength && RunHistory.isRunID(id), "\(id)")
        }
        #expect(Set(ids).count == ids.count)
        for (earlier, later) in zip(ids, ids.dropFirst()) {
            #expect(earlier.prefix(22) <= later.prefix(22), "\(earlier) made before \(later)")
        }
        #expect(ids.first!.prefix(22) < ids.last!.prefix(22), "1,000 ids in one microsecond")
    }

    /// The id names the one clock reading it is given: local date and time,
    /// and its microseconds (truncated, never rounded up into the next second).
    @Test func aRunIdNamesItsInstant() {
        let start = RunStart(seconds: 1_795_356_187, nanoseconds: 999_999_999, monotonicSeconds: 0)
        var seconds = time_t(start.seconds)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let local = String(format: "%04d%02d%02d-%02d%02d%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec)
        let id = RunRecord.makeRunID(startingAt: start)
        #expect(id.hasPrefix(local + ".999999-"), "\(id)")
        #expect(RunRecord.makeRunID(startingAt: RunStart(seconds: start.seconds, nanoseconds: 7_000, monotonicSeconds: 0)).hasPrefix(local + ".000007-"))
    }

    /// A taken id (a run's folder there already: `mkdir` fails with EEXIST)
    /// is not used: a fresh one is drawn from a clock reading of its own,
    /// and the record's start is the instant of the id it took.
    @Test func aTakenIdDrawsAFreshOneFromAFreshReading() throws {
        let base = try Base()
        var starts: [RunStart] = []
        let taken = RunRecord.makeRunID()
        try FileManager.default.createDirectory(atPath: base.path + "/" + taken, withIntermediateDirectories: false)
        let record = try RunRecord(baseDirectory: base.path, makeRunID: { start in
            starts.append(start)
            return starts.count == 1 ? taken : RunRecord.makeRunID(startingAt: start)
        })
        #expect(starts.count == 2)
        #expect(record.runID != taken && RunHistory.isRunID(record.runID), "\(record.runID)")
        #expect(record.start == starts[1] && record.runID.prefix(23) == RunRecord.makeRunID(startingAt: starts[1]).prefix(23))
        #expect(starts[0].wallSeconds <= starts[1].wallSeconds && starts[0].monotonicSeconds <= starts[1].monotonicSeconds)
        #expect(try FileManager.default.contentsOfDirectory(atPath: base.path + "/" + taken).isEmpty, "the taken run's folder was written into")
    }

    /// Names that sanitizing alone would merge keep their own files, and
    /// the readable part stays short whatever the name's length.
    @Test func fileNamesAreUniqueByIndexAndShort() {
        let names = ["東京", "大阪", "a/b", "a_b", "a b", String(repeating: "x", count: 300) + "1", String(repeating: "x", count: 300) + "2",
                     "../up", ".hidden", "line\nbreak", "\u{1B}[31mred", "\u{202E}txt.exe"]
        let stems = names.enumerated().map { RecordFileName.stem(index: $0.offset, name: $0.element) }
        #expect(Set(stems).count == names.count)
        #expect(stems[0] == "000000-東京" && stems[2] == "000002-a_b" && stems[3] == "000003-a_b")
        for stem in stems {
            #expect(stem.utf8.count <= 7 + RecordFileName.readableLimit, "\(stem)")
            #expect(!stem.contains("/") && !stem.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }, "\(stem)")
        }
        #expect(RecordFileName.stem(index: 1_234_567, name: "build") == "1234567-build")
    }
}
