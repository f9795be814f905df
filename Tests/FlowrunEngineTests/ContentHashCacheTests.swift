@testable import FlowrunEngine
import FlowrunModel
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `ContentHashCache` and `FileStamp`: git's index rule for the incremental
/// check. A settled stamp finds a hash again without reading; a stamp taken
/// in the same clock tick as the read ("racy clean") never does, because a
/// write later in that tick would leave it as it was.
@Suite struct ContentHashCacheTests {
    static let second: Int64 = 1_000_000_000

    /// A file with `text`, and its stamp's ctime (the moment it was written, in the kernel's clock).
    func file(_ text: String) throws -> (path: String, changed: Int64) {
        let path = NSTemporaryDirectory() + "/content-hash-cache-\(UUID().uuidString)"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        let stamp = try #require(FileStamp.of(path))
        return (path, stamp.changed)
    }

    @Test func aSettledStampIsReadOnceAndThenFoundByItsStamp() throws {
        let (path, changed) = try file("one")
        defer { unlink(path) }
        let cache = ContentHashCache(now: { changed + 3 * Self.second })
        let first = try #require(cache.hash(path))
        let second = try #require(cache.hash(path))
        #expect(cache.contentReads == 1)
        #expect(first.hash == second.hash)
        #expect(first.stamp != nil)
        #expect(first.hash == ContentHash.of(path))
    }

    /// The racy case: read in the tick the file was written. Each look reads
    /// it again, and no stamp is handed out for the state to keep.
    @Test func aStampFromTheTickOfTheReadIsNeverTrusted() throws {
        let (path, changed) = try file("one")
        defer { unlink(path) }
        let cache = ContentHashCache(now: { changed })
        let first = try #require(cache.hash(path))
        #expect(first.stamp == nil)
        // Unchanged, and still read again: the stamp was not kept.
        #expect(cache.hash(path)?.hash == first.hash)
        #expect(cache.contentReads == 2)
        // Rewritten (in the same tick, the stamp may not move): the new content's hash.
        try "two".write(toFile: path, atomically: false, encoding: .utf8)
        let second = try #require(cache.hash(path))
        #expect(cache.contentReads == 3)
        #expect(second.hash == ContentHash.of(path))
        #expect(second.hash != first.hash)
    }

    @Test(arguments: [Int64(0), 1_000_000, 1_999_999_999])
    func aStampYoungerThanTheMarginIsNotSettled(age: Int64) {
        let stamp = FileStamp(device: 1, inode: 2, type: UInt32(S_IFREG), size: 3, modified: 10 * Self.second, changed: 10 * Self.second)
        #expect(!stamp.isSettled(readStart: 10 * Self.second + age))
        #expect(stamp.isSettled(readStart: 12 * Self.second))
    }

    /// Until a task starts nothing of the run writes: a hash taken stands
    /// without a new stat (here: even for a file removed since); after, each look stats.
    @Test func untilATaskStartsAHashStandsWithoutAStat() throws {
        let (path, changed) = try file("one")
        let cache = ContentHashCache(now: { changed + 3 * Self.second })
        let first = try #require(cache.hash(path))
        unlink(path)
        #expect(cache.hash(path)?.hash == first.hash)
        cache.taskStarting()
        #expect(cache.hash(path) == nil)
    }

    /// A glob is walked once a run until a task starts; then again each time.
    @Test func untilATaskStartsAGlobIsWalkedOnce() throws {
        let folder = NSTemporaryDirectory() + "/content-hash-globs-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "a".write(toFile: folder + "/a.h", atomically: false, encoding: .utf8)
        let pattern = try GlobPattern.parse("*.h")
        let cache = ContentHashCache()
        #expect(cache.paths(matching: pattern, base: folder) == ["a.h"])
        try "b".write(toFile: folder + "/b.h", atomically: false, encoding: .utf8)
        #expect(cache.paths(matching: pattern, base: folder) == ["a.h"])
        cache.taskStarting()
        #expect(cache.paths(matching: pattern, base: folder) == ["a.h", "b.h"])
    }

    @Test func anMtimeInTheFutureIsNeverSettled() {
        let stamp = FileStamp(device: 1, inode: 2, type: UInt32(S_IFREG), size: 3, modified: 100 * Self.second, changed: 10 * Self.second)
        #expect(!stamp.isSettled(readStart: 50 * Self.second))
    }

    @Test func aRecordedStampSparesTheReadAndADifferentOneDoesNot() throws {
        let (path, changed) = try file("one")
        defer { unlink(path) }
        let stamp = try #require(FileStamp.of(path))
        let cache = ContentHashCache(now: { changed + 3 * Self.second })
        // The state's hash is taken as it is: the file is not read.
        let recorded = IncrementalRecord.PathHash(path: "x", hash: "recorded", stamp: stamp)
        #expect(cache.hash(path, recorded: recorded)?.hash == "recorded")
        #expect(cache.contentReads == 0)
        // Another run, whose state has another size (or inode, mtime, ctime): read, and the content decides.
        var other = stamp
        other.size += 1
        let stale = IncrementalRecord.PathHash(path: "x", hash: "recorded", stamp: other)
        let next = ContentHashCache(now: { changed + 3 * Self.second })
        #expect(next.hash(path, recorded: stale)?.hash == ContentHash.of(path))
        #expect(next.contentReads == 1)
    }

    @Test func stampsSurviveTheStateFileAndOldStateStillReads() throws {
        let stamp = FileStamp(device: 2049, inode: 77, type: UInt32(S_IFREG), size: 12, modified: 1_700_000_000_123_456_789, changed: 1_700_000_001_000_000_000)
        let record = IncrementalRecord(
            identity: "i", sources: [.init(path: "a.c", hash: "h1", stamp: stamp), .init(path: "b.c", hash: "h2")],
            generates: [.init(path: "a.o", hash: "h3")], stdout: "", exitCode: 0, outputs: [])
        #expect(FileStamp(text: stamp.text) == stamp)
        // A stamp that does not read is none (the file is read again), not a wrong one.
        for bad in ["1:2:3", "1:2:3:4:5:x", "1:2:3:4:5:", ":1:2:3:4:5", "1:2:3:4:5:-6", "1:2:3:4:5:99999999999999999999"] {
            #expect(FileStamp(text: bad) == nil, "\(bad)")
        }
        let read = try #require(IncrementalRecord(json: record.json(task: "t"), task: "t"))
        #expect(read.sources.map(\.stamp) == [stamp, nil])
        #expect(read == record)
        // A state file written before stamps ([path, hash] pairs) reads as having none.
        let old = #"{"version":1,"task":"t","identity":"i","sources":[["a.c","h1"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#
        #expect(IncrementalRecord(json: old, task: "t")?.sources == [.init(path: "a.c", hash: "h1")])
    }

    /// The state's entries are found by walking them in step with the glob's
    /// matches (their usual order) and by path once the two part: in any
    /// order, with a file added or one gone, every recorded stamp still
    /// spares its read, and only the new file is read.
    @Test(arguments: ["same order", "reversed", "one gone", "one added"])
    func recordedStampsAreFoundWhateverTheirOrder(change: String) throws {
        let folder = NSTemporaryDirectory() + "/content-hash-order-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let names = ["a.h", "b.h", "c.h", "d.h"]
        for name in names { try name.write(toFile: folder + "/" + name, atomically: false, encoding: .utf8) }
        var recorded: [IncrementalRecord.PathHash] = []
        for name in names {
            let stamp = try #require(FileStamp.of(folder + "/" + name))
            recorded.append(.init(path: name, hash: "recorded " + name, stamp: stamp))
        }
        let latest = recorded.compactMap(\.stamp).map { max($0.modified, $0.changed) }.max() ?? 0
        let cache = ContentHashCache(now: { latest + 3 * Self.second })
        var expected = recorded.map(\.hash)
        switch change {
        case "reversed": recorded.reverse()
        case "one gone": recorded.insert(.init(path: "0.h", hash: "gone", stamp: recorded[0].stamp), at: 1)
        case "one added":
            recorded.remove(at: 1)
            expected[1] = try #require(ContentHash.of(folder + "/b.h"))
        default: break
        }
        let hashes = RunEngine.hashes(of: [try GlobPattern.parse("*.h")], base: folder, recorded: recorded, hashes: cache)
        #expect(hashes?.map(\.path) == names)
        #expect(hashes?.map(\.hash) == expected)
        #expect(cache.contentReads == (change == "one added" ? 1 : 0))
    }

    /// A walked glob's hashes are kept whole for the next task that lists
    /// it, until a task starts or the next run of a watch; only when every
    /// stamp was settled (else each look reads the unsettled file again), and
    /// never for a pattern without wildcards (one file, looked up by path).
    @Test func aGlobsHashesAreKeptWholeUntilATaskStarts() throws {
        let folder = NSTemporaryDirectory() + "/content-hash-glob-hashes-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for name in ["a.h", "b.h"] { try name.write(toFile: folder + "/" + name, atomically: false, encoding: .utf8) }
        let changed = try #require(FileStamp.of(folder + "/b.h")).changed
        let glob = try GlobPattern.parse("*.h")
        let literal = try GlobPattern.parse("a.h")

        let settled = ContentHashCache(now: { changed + 3 * Self.second })
        let first = try #require(RunEngine.hashes(of: [glob, literal], base: folder, hashes: settled))
        #expect(settled.hashes(matching: glob, base: folder)?.map(\.path) == ["a.h", "b.h"])
        #expect(settled.hashes(matching: literal, base: folder) == nil)
        #expect(RunEngine.hashes(of: [glob], base: folder, hashes: settled) == Array(first[0..<2]))
        #expect(settled.contentReads == 2)
        settled.taskStarting()
        #expect(settled.hashes(matching: glob, base: folder) == nil)

        let watch = ContentHashCache(now: { changed + 3 * Self.second })
        _ = RunEngine.hashes(of: [glob], base: folder, hashes: watch)
        watch.runStarting()
        #expect(watch.hashes(matching: glob, base: folder) == nil)

        // Read in the tick they were written: not kept, read again by each look.
        let racy = ContentHashCache(now: { changed })
        _ = RunEngine.hashes(of: [glob], base: folder, hashes: racy)
        #expect(racy.hashes(matching: glob, base: folder) == nil)
        _ = RunEngine.hashes(of: [glob], base: folder, hashes: racy)
        #expect(racy.contentReads == 4)
    }
}
