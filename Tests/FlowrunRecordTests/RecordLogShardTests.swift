import Foundation
import Testing
@testable import FlowrunRecord
#if canImport(Glibc)
import Glibc
#endif

/// Logs are sharded a thousand tasks a folder (`logs/000/000042-NAME.log`);
/// readers find the shard from the file's name, and still read a record
/// made before the sharding (its logs directly in `logs/`).
@Suite struct RecordLogShardTests {
    @Test func theShardIsTheIndexInThousands() {
        #expect(RecordFileName.shard(index: 0) == "000")
        #expect(RecordFileName.shard(index: 999) == "000")
        #expect(RecordFileName.shard(index: 1000) == "001")
        #expect(RecordFileName.shard(index: 999_999) == "999")
        #expect(RecordFileName.shard(index: 1_000_000) == "1000")
        #expect(RecordFileName.shard(ofFile: "000042-build.log") == "000")
        #expect(RecordFileName.shard(ofFile: "1234567-m_7_.log.1.stdout") == "1234")
        #expect(RecordFileName.shard(ofFile: RecordFileName.stem(index: 25_123, name: "東京") + ".log") == "025")
        #expect(RecordFileName.shard(ofFile: "build.log") == nil)
        #expect(RecordFileName.shard(ofFile: "12345-short.log") == nil)
    }

    private static func temporaryFolder() throws -> String {
        var template = Array((FileManager.default.temporaryDirectory.path + "/flowrun-shards.XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(cString: try #require(made))
    }

    private static func readLog(_ history: RunHistory, _ id: String, _ file: String) -> String? {
        let descriptor = history.openLog(id, file: file)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = Glibc.read(descriptor, &buffer, buffer.count)
        return count >= 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    @Test func logsGoToTheirShardAndAreReadFromIt() throws {
        let base = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let record = try RunRecord(baseDirectory: base)
        for index in [7, 1_042] {
            let log = record.log(index: index, name: "t\(index)", exists: false)
            log.write("from \(index)\n")
            log.close()
            #expect(log.problem == nil)
        }
        _ = record.log(index: 8, name: "quiet", exists: false)  // never written: no file
        let folder = base + "/" + record.runID + "/logs"
        #expect(record.logPath(index: 1_042, name: "t1042") == folder + "/001/001042-t1042.log")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder)) == ["000", "001"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/000") == ["000007-t7.log"])
        var info = stat()
        #expect(stat(folder + "/001", &info) == 0 && info.st_mode & 0o7777 == 0o700)
        #expect(record.logTail(index: 1_042, name: "t1042", lines: 5) == ["from 1042"])

        let history = try RunHistory(path: base)
        #expect(Self.readLog(history, record.runID, "000007-t7.log") == "from 7\n")
        #expect(Self.readLog(history, record.runID, "001042-t1042.log") == "from 1042\n")
        #expect(history.logTail(record.runID, file: "001042-t1042.log", lines: 5) == ["from 1042"])
        #expect(history.openLog(record.runID, file: "000008-quiet.log") < 0 && errno == ENOENT)
    }

    @Test func aRecordMadeBeforeShardingIsStillRead() throws {
        let base = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let id = "20261125-120000-0123456789abcdef"
        try FileManager.default.createDirectory(atPath: base + "/" + id + "/logs", withIntermediateDirectories: true)
        try Data("flat\n".utf8).write(to: URL(fileURLWithPath: base + "/" + id + "/logs/000003-old.log"))
        let history = try RunHistory(path: base)
        #expect(Self.readLog(history, id, "000003-old.log") == "flat\n")
        #expect(history.logTail(id, file: "000003-old.log", lines: 1) == ["flat"])
    }
}
