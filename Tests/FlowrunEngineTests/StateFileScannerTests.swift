@testable import FlowrunEngine
import FlowrunModel
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `StateFileScanner`: a `.flowrun/state` file in the writer's shape is
/// read straight from its bytes; anything else goes to the general JSON
/// reader, and the record read is the one that reader finds (or none).
@Suite struct StateFileScannerTests {
    static let stamp = FileStamp(device: 65024, inode: 16362608, type: UInt32(S_IFREG), size: 16762, modified: 1_744_038_112_000_000_000, changed: 1_795_936_979_207_692_580)

    static let record = IncrementalRecord(
        identity: "85e0952b92dd2c5f2c29d3c9132ed7bad9e8a4da52032ae023a704aa4018e51f",
        sources: [
            .init(path: "crypto/x509/x_x509.cc", hash: "f818bcde37e0ffb00f823512bf1afb6c12771ebea15c982f9f99c5ea7e008d41", stamp: stamp),
            .init(path: "include/CCryptoBoringSSL.h", hash: "7570a35f4864d330dceeac579f848dde4abf2e419f079a7d24039af5a55ffaf4"),
            .init(path: "données/ü.h", hash: "h3", stamp: FileStamp(device: 0, inode: 0, type: 0, size: 0, modified: 0, changed: 0)),
        ],
        generates: [.init(path: "build/x_x509.o", hash: "e66e", stamp: stamp)],
        stdout: "one line", exitCode: 0, outputs: [.init(key: "k", value: "v")])

    /// The scanner alone (nil: it gave up and the general reader decides).
    func scanned(_ text: String, task: String = "t") -> IncrementalRecord? {
        Array(text.utf8).withUnsafeBufferPointer { bytes in
            var scanner = StateFileScanner(bytes)
            return scanner.record(task: task)
        }
    }

    /// Equal in every field, stamps included (a `PathHash` compares path and hash only).
    func same(_ first: IncrementalRecord?, _ second: IncrementalRecord?) -> Bool {
        first == second && first?.sources.map(\.stamp) == second?.sources.map(\.stamp)
            && first?.generates.map(\.stamp) == second?.generates.map(\.stamp) && first?.exitCode == second?.exitCode
    }

    @Test func whatTheWriterWritesIsReadBackByTheScanner() throws {
        for exitCode in [0, 1, -1, 255, nil] {
            var record = Self.record
            record.exitCode = exitCode
            let text = record.json(task: "cc-x_x509")
            let fast = try #require(scanned(text, task: "cc-x_x509"), "\(text)")
            #expect(same(fast, record))
            #expect(same(IncrementalRecord(bytes: Array(text.utf8), task: "cc-x_x509"), record))
            #expect(same(IncrementalRecord(json: text, task: "cc-x_x509"), record))
        }
        // Empty lists, an old file's pairs without stamps.
        let empty = IncrementalRecord(identity: "i", sources: [], generates: [], stdout: "", exitCode: nil, outputs: [])
        #expect(same(scanned(empty.json(task: "t")), empty))
        let old = #"{"version":1,"task":"t","identity":"i","sources":[["a.c","h1"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#
        #expect(same(scanned(old), IncrementalRecord(json: old, task: "t")))
    }

    /// A `\u` escape (a NUL as `\u0000`, DEL, a C1 control) and an escaped
    /// task name are the general reader's: the scanner gives up, and the record read is its.
    @Test func escapedTextIsLeftToTheGeneralReader() throws {
        var record = Self.record
        record.stdout = "line one\nline two \"quoted\" \\ tab\t"
        record.sources.append(.init(path: "odd\"name\u{0}.h", hash: "h"))
        record.outputs = [.init(key: "é", value: "\u{1F600}\u{7F}\u{9B}")]
        let text = record.json(task: "task \"two\"")
        #expect(scanned(text, task: "task \"two\"") == nil)
        #expect(same(IncrementalRecord(bytes: Array(text.utf8), task: "task \"two\""), record))
    }

    /// The writer's two-character escapes (a fan-out's list task keeps its
    /// lines in stdout) are read by the scanner, to the record the general
    /// reader reads; an entry with an escape read twice through one pool is
    /// the same entry both times.
    @Test func theWritersTwoCharacterEscapesAreReadByTheScanner() throws {
        var record = Self.record
        record.stdout = "unit1\nunit2\n\"q\" \\ /\t\r\u{8}\u{C}"
        record.sources.append(.init(path: "dir/odd\"name\\.h", hash: "h"))
        record.outputs = [.init(key: "k\n", value: "v\tw")]
        let text = record.json(task: "t")
        #expect(text.contains("\\n") && text.contains("\\\""))
        let fast = try #require(scanned(text), "\(text)")
        #expect(same(fast, record))
        #expect(same(fast, IncrementalRecord(json: text, task: "t")))
        var pool = StateEntryPool()
        for _ in 0..<2 {
            let again = Array(text.utf8).withUnsafeBufferPointer { bytes in
                var scanner = StateFileScanner(bytes)
                return scanner.record(task: "t", pool: &pool)
            }
            #expect(same(again, record))
        }
        // Other escapes, `\/` of another writer included: read as that writer meant them.
        let other = #"{"version":1,"task":"t","identity":"i","sources":[["a\/b.c","h"]],"generates":[],"stdout":"x\u0041y","exit_code":0,"outputs":[]}"#
        #expect(scanned(other) == nil)
        #expect(IncrementalRecord(bytes: Array(other.utf8), task: "t")?.stdout == "xAy")
        let slash = #"{"version":1,"task":"t","identity":"i","sources":[["a\/b.c","h"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#
        #expect(same(scanned(slash), IncrementalRecord(json: slash, task: "t")))
        #expect(scanned(slash)?.sources.first?.path == "a/b.c")
    }

    /// Files the writer never makes: each read exactly as the general reader reads it.
    @Test(arguments: [
        // Spaces, another key order, a version 2, another task.
        #"{ "version": 1, "task": "t", "identity": "i", "sources": [["a","h","1:2:3:4:5:6"]], "generates": [], "stdout": "", "exit_code": 0, "outputs": [] }"#,
        #"{"task":"t","version":1,"identity":"i","sources":[],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
        #"{"version":2,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
        #"{"version":1,"task":"u","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
        // Numbers: huge, a fraction, an exponent, a leading zero (not JSON), a minus alone.
        #"{"version":1,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":99999999999999999999999,"outputs":[]}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":123456789012345678,"outputs":[]}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":1.5,"outputs":[]}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":1e2,"outputs":[]}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":01,"outputs":[]}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":-,"outputs":[]}"#,
        #"{"version":1.0,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
        // Stamps that do not read (none), one that is a number, a fourth field, a huge field.
        #"{"version":1,"task":"t","identity":"i","sources":[["a","h","1:2:3"],["b","h","x"],["c","h","1:2:3:4:5:99999999999999999999"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[["a","h",5]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[["a","h","1:2:3:4:5:6","x"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
        // A path that is not a string, a list that is not closed, trailing text, two documents, a duplicate key.
        #"{"version":1,"task":"t","identity":"i","sources":[[1,"h"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[["a","h"],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":0,"outputs":[]}x"#,
        #"{"version":1,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":0,"outputs":[]}{}"#,
        #"{"version":1,"task":"t","identity":"i","sources":[],"generates":[],"stdout":"","exit_code":0,"outputs":[],"stdout":"two"}"#,
        "{\"version\":1,\"task\":\"t\",\"identity\":\"i\",\"sources\":[],\"generates\":[],\"stdout\":\"\",\"exit_code\":0,\"outputs\":[]}\n\n",
        // A raw control character and a raw NUL in a string: not JSON.
        "{\"version\":1,\"task\":\"t\",\"identity\":\"i\",\"sources\":[[\"a\u{0}b\",\"h\"]],\"generates\":[],\"stdout\":\"\",\"exit_code\":0,\"outputs\":[]}",
        "{\"version\":1,\"task\":\"t\",\"identity\":\"i\",\"sources\":[],\"generates\":[],\"stdout\":\"a\nb\",\"exit_code\":0,\"outputs\":[]}",
        "", "null", "[]", "{}",
    ])
    func oddFilesReadAsTheGeneralReaderReadsThem(text: String) {
        #expect(same(IncrementalRecord(bytes: Array(text.utf8), task: "t"), IncrementalRecord(json: text, task: "t")))
    }

    /// A file cut anywhere (a writer killed mid-write leaves only its
    /// temporary file, but a disk may lose a tail) is no record.
    @Test func aTruncatedFileIsNoRecord() {
        let bytes = Array(Self.record.json(task: "t").utf8)
        // Without its last byte (the newline) it is still the whole record.
        for count in 0..<bytes.count - 1 {
            #expect(IncrementalRecord(bytes: Array(bytes[0..<count]), task: "t") == nil, "\(count) bytes")
        }
        #expect(same(IncrementalRecord(bytes: Array(bytes.dropLast()), task: "t"), Self.record))
    }

    /// Bytes that are not UTF-8 in a path: the scanner gives up, and the
    /// general reader's repair (U+FFFD) is what is read, as before.
    @Test func invalidUTF8IsRepairedAsTheGeneralReaderDoes() throws {
        var bytes = Array(#"{"version":1,"task":"t","identity":"i","sources":[["a"#.utf8)
        bytes += [0xFF, 0xC3, UInt8(ascii: "b"), 0xE2, 0x82]
        bytes += Array(#"","h","1:2:3:4:5:6"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#.utf8)
        let general = IncrementalRecord(json: String(decoding: bytes, as: UTF8.self), task: "t")
        let read = try #require(IncrementalRecord(bytes: bytes, task: "t"))
        #expect(same(read, general))
        #expect(read.sources.first?.path == "a\u{FFFD}\u{FFFD}b\u{FFFD}")
        // A stamp with a byte that is not ASCII is none, as a stamp that does not read.
        var stamped = Array(#"{"version":1,"task":"t","identity":"i","sources":[["a","h","1:2:3:4:5:"#.utf8)
        stamped += [0xD9, 0xA6]  // ٦, a digit to Unicode, not to a stamp
        stamped += Array(#""]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#.utf8)
        let odd = try #require(IncrementalRecord(bytes: stamped, task: "t"))
        #expect(odd.sources.map(\.stamp) == [nil])
        #expect(same(odd, IncrementalRecord(json: String(decoding: stamped, as: UTF8.self), task: "t")))
    }

    /// Many entries, long strings: read whole, the same as the general reader.
    @Test func aLargeFileReadsWhole() throws {
        var record = Self.record
        record.sources = (0..<5_000).map { .init(path: "include/" + String(repeating: "x", count: $0 % 300) + "\($0).h", hash: String(repeating: "a", count: 64), stamp: $0 % 2 == 0 ? Self.stamp : nil) }
        record.stdout = String(repeating: "y", count: 200_000)
        let text = record.json(task: "t")
        let fast = try #require(scanned(text))
        #expect(same(fast, record))
        #expect(same(fast, IncrementalRecord(json: text, task: "t")))
    }

    /// Entries read before are found by their very bytes (`StateEntryPool`):
    /// one shared by many files reads each as a fresh read would, and a near
    /// variant (another stamp, another hash, an escaped quote that `memchr`
    /// would cut at) is never taken for the entry it resembles.
    @Test func entriesReadBeforeAreFoundOnlyByTheirVeryBytes() throws {
        var pool = StateEntryPool()
        let first = #"{"version":1,"task":"t","identity":"i","sources":[["a","h","1:2:3:4:5:6"],["b\"c","h"],["a\",\"h","x"]],"generates":[["a","h"]],"stdout":"","exit_code":0,"outputs":[]}"#
        let variants = [
            first,
            #"{"version":1,"task":"t","identity":"i","sources":[["a","h","1:2:3:4:5:7"],["a","h"],["a","h","1:2:3:4:5:6"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
            #"{"version":1,"task":"t","identity":"i","sources":[["a","H","1:2:3:4:5:6"],["a\"","h"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
            #"{"version":1,"task":"t","identity":"i","sources":[["a\",\"h"],["a","h","1:2:3:4:5:6"]],"generates":[],"stdout":"","exit_code":0,"outputs":[]}"#,
            #"{"version":1,"task":"t","identity":"i","sources":[["a","h","1:2:3:4:5:6"]],"generates":[["a","h"]],"stdout":"","exit_code":0,"outputs":[]}"#,
            Self.record.json(task: "t"),
        ]
        for text in variants {
            let pooled = IncrementalRecord(bytes: Array(text.utf8), task: "t", pool: &pool)
            #expect(same(pooled, IncrementalRecord(json: text, task: "t")), "\(text)")
        }
        // The writer's own entries were kept and are found again.
        let again = try #require(IncrementalRecord(bytes: Array(Self.record.json(task: "t").utf8), task: "t", pool: &pool))
        #expect(same(again, Self.record))
    }

    /// Entries that collide in the pool's hash, or more than it holds,
    /// are read as without it: the pool is a shortcut, never a limit.
    @Test func aFullPoolReadsAsWithoutIt() throws {
        var pool = StateEntryPool()
        var record = Self.record
        record.sources = (0..<(StateEntryPool.capacityLimit + 100)).map { .init(path: "p\($0)", hash: "h\($0 % 7)", stamp: Self.stamp) }
        let text = record.json(task: "t")
        for _ in 0..<2 {
            #expect(same(IncrementalRecord(bytes: Array(text.utf8), task: "t", pool: &pool), record))
        }
        // Entries of a megabyte each: past the pool's bytes, read as without it.
        var large = Self.record
        large.sources = (0..<20).map { .init(path: String(repeating: "p", count: 1 << 20) + "\($0)", hash: "h", stamp: Self.stamp) }
        var fresh = StateEntryPool()
        for _ in 0..<2 {
            #expect(same(IncrementalRecord(bytes: Array(large.json(task: "t").utf8), task: "t", pool: &fresh), large))
        }
    }
}
