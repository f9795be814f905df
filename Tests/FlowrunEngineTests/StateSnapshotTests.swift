@testable import FlowrunEngine
import Testing

/// `StateSnapshot`'s layout: what it writes it reads back, and anything
/// else is not a snapshot (each state file is then read as before).
@Suite struct StateSnapshotTests {
    static let stamp = FileStamp(device: 2049, inode: 77, type: 0o040000, size: 4096, modified: 1_764_000_000_123_456_789, changed: 1_764_000_000_123_456_789)
    static let first = String(repeating: "a", count: 64) + ".json"
    static let second = String(repeating: "0", count: 63) + "f.json"

    @Test func whatIsWrittenReadsBackByteForByte() throws {
        // A record's bytes may hold anything, newlines and a "- " line included.
        let snapshot = StateSnapshot(folderStamp: Self.stamp, files: [Self.first: Array("{\"x\":1}\n- \n\0".utf8), Self.second: nil])
        let bytes = snapshot.encoded()
        #expect(StateSnapshot(bytes: bytes) == snapshot)
        // The same state, the same bytes.
        #expect(StateSnapshot(folderStamp: Self.stamp, files: [Self.second: nil, Self.first: Array("{\"x\":1}\n- \n\0".utf8)]).encoded() == bytes)
        #expect(StateSnapshot(bytes: StateSnapshot(folderStamp: Self.stamp, files: [:]).encoded()) == StateSnapshot(folderStamp: Self.stamp, files: [:]))
    }

    @Test(arguments: [
        "",
        "flowrun state snapshot 2\n2049:77:16384:4096:1:1\n",
        "flowrun state snapshot 1\n2049:77:16384:4096:1\n",
        "flowrun state snapshot 1\n2049:77:16384:4096:1:1\n\(first) 9\n{}\n",
        "flowrun state snapshot 1\n2049:77:16384:4096:1:1\n\(first) -1\n",
        "flowrun state snapshot 1\n2049:77:16384:4096:1:1\n\(first) 99999999999\n",
        "flowrun state snapshot 1\n2049:77:16384:4096:1:1\n../\(first.dropFirst(3)) -\n",
        "flowrun state snapshot 1\n2049:77:16384:4096:1:1\n\(first.uppercased()) -\n",
        "flowrun state snapshot 1\n2049:77:16384:4096:1:1\n\(first) -\n\(first) -\n",
        "flowrun state snapshot 1\n2049:77:16384:4096:1:1\n\(first) -",
        "flowrun state snapshot 1\n2049:77:16384:4096:1:1\n\(first)\n",
    ])
    func anythingElseIsNoSnapshot(text: String) {
        #expect(StateSnapshot(bytes: Array(text.utf8)) == nil)
    }
}
