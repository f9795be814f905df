import Foundation
import Testing
@testable import FlowrunEvents
@testable import FlowrunRecord
#if canImport(Glibc)
import Glibc
#endif

/// Which run a RUN argument names, in which order runs come, and how a run
/// is read back from a record written by `RunRecord` itself.
@Suite struct RunHistoryResolveTests {
    /// A record folder with run folders of the given ids, each with a first
    /// event at the given time; removed afterwards.
    private final class Folder {
        let path: String
        init(_ runs: [(id: String, time: String)]) throws {
            var template = Array((FileManager.default.temporaryDirectory.path + "/flowrun-history.XXXXXX").utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
            path = String(cString: try #require(made))
            for run in runs {
                try FileManager.default.createDirectory(atPath: path + "/" + run.id, withIntermediateDirectories: false)
                let line = #"{"event":"run_started","time":"\#(run.time)","elapsed":0,"run_id":"\#(run.id)","workflow":"w","path":"x","members":1}"#
                try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: path + "/" + run.id + "/events.jsonl"))
            }
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    @Test(arguments: [
        ("20261125-155801-ee105dddb27682a7", true),
        ("20261125-155801-EE105DDDB27682A7", false),  // the writer makes lowercase hex only
        ("20261125-155801-ee105dddb27682a", false),
        ("2026112a-155801-ee105dddb27682a7", false),
        ("latest", false),
        (".latest-20261125-155801-ee105dddb27682a7", false),
        // Named to the microsecond (35 characters), as runs are now.
        ("20261125-155801.000417-ee105dddb276", true),
        ("20261125-155801.000417-EE105DDDB276", false),
        ("20261125-155801.000417-ee105dddb27", false),
        ("20261125-155801.000417-ee105dddb2768", false),
        ("20261125-155801.00041a-ee105dddb276", false),
        ("20261125-155801-000417-ee105dddb276", false),
        ("20261125-155801.000417.ee105dddb276", false),
        ("20261125-155801.000417-ee105dddb276/", false),
        (".latest-20261125-155801.000417-ee105dddb276", false),
    ])
    func onlyNamesShapedLikeRunIDsAreRuns(_ name: String, _ isRun: Bool) {
        #expect(RunHistory.isRunID(name) == isRun)
    }

    /// Ids sort by their second; runs of the same second by their first event's time.
    @Test func runsOfTheSameSecondAreOrderedByTheirStart() throws {
        let folder = try Folder([
            ("20261125-100000-ffffffffffffffff", "2026-11-25T09:00:00.100Z"),
            ("20261125-100000-0000000000000000", "2026-11-25T09:00:00.900Z"),
            ("20261125-095959-8888888888888888", "2026-11-25T08:59:59.999Z"),
        ])
        let history = try RunHistory(path: folder.path)
        #expect(history.runIDs() == ["20261125-095959-8888888888888888", "20261125-100000-ffffffffffffffff", "20261125-100000-0000000000000000"])
        #expect(history.latestID() == "20261125-100000-0000000000000000")
        #expect(try history.resolve(nil) == "20261125-100000-0000000000000000")
        #expect(try history.resolve("20261125-0959") == "20261125-095959-8888888888888888")
        #expect(throws: RunHistory.Problem.self) { try history.resolve("20261125-1000") }
        #expect(throws: RunHistory.Problem.self) { try history.resolve("") }
    }

    /// Ids named to the microsecond sort by name, within one second too,
    /// whatever their first event says (it is not read); one from before
    /// microseconds sorts with them by name when its second is another. A
    /// prefix up to the microseconds names one run.
    @Test func runsNamedToTheMicrosecondAreOrderedByName() throws {
        let folder = try Folder([
            ("20261125-100000.250000-000000000001", "2026-11-25T09:00:00.900Z"),
            ("20261125-100000.750000-000000000000", "2026-11-25T09:00:00.100Z"),
            ("20261125-095959-8888888888888888", "2026-11-25T09:00:00.999Z"),
        ])
        let history = try RunHistory(path: folder.path)
        #expect(history.runIDs() == ["20261125-095959-8888888888888888", "20261125-100000.250000-000000000001", "20261125-100000.750000-000000000000"])
        #expect(history.latestID() == "20261125-100000.750000-000000000000")
        #expect(try history.resolve(nil) == "20261125-100000.750000-000000000000")
        #expect(try history.resolve("20261125-100000.2") == "20261125-100000.250000-000000000001")
        #expect(try history.resolve("20261125-100000.750000-000000000000") == "20261125-100000.750000-000000000000")
        #expect(try history.resolve("20261125-0959") == "20261125-095959-8888888888888888")
        #expect(throws: RunHistory.Problem.self) { try history.resolve("20261125-100000") }
    }

    @Test func epochSecondsReadTheEventsTime() {
        #expect(RecordedRun.epochSeconds("1970-01-01T00:00:01.250Z") == 1.25)
        #expect(RecordedRun.epochSeconds("2026-11-22T14:03:07.000Z") == 1_795_356_187)
        #expect(RecordedRun.epochSeconds("not a time") == nil)
    }

    /// A record `RunRecord` wrote, read back while its writer still holds
    /// it (running), then once the writer is gone (no summary: interrupted).
    @Test func aRecordHeldByItsWriterIsLive() throws {
        let folder = try Folder([])
        var record: RunRecord? = try RunRecord(baseDirectory: folder.path)
        let id = try #require(record?.runID)
        let directory = try #require(record?.directory)
        record?.report(RunEvent(elapsed: 0, .runStarted(.init(runID: id, workflow: "w", path: directory, maxParallel: 1, members: 2))))
        let log = RunEvent.LogPath(path: folder.path + "/" + id + "/logs/000000-build.log", offsetInRecord: (folder.path + "/" + id + "/").utf8.count)
        record?.report(RunEvent(elapsed: 0.1, .taskStarted(.init(task: "build", attempt: 1, log: log))))
        record?.finish()
        let history = try RunHistory(path: folder.path)
        #expect(history.isLive(id))
        let live = try RecordedRun.read(id, in: history)
        #expect(live.state == .running && live.workflow == "w" && live.plannedTasks == 2)
        #expect(live.task(named: "build")?.status == .running && live.task(named: "build")?.logFile == "000000-build.log")
        record = nil
        #expect(!history.isLive(id))
        #expect(try RecordedRun.read(id, in: history).state == .interrupted)
    }
}
