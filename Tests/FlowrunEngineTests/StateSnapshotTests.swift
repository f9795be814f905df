@testable import FlowrunEngine
import CFlowrunSystem
import Testing
#if canImport(Glibc)
import Glibc
#endif

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

/// Where a snapshot is not used: a network or shared file system, whose
/// clients may see a folder's cached stamp after another host wrote in it.
@Suite struct StateSnapshotFileSystemTests {
    @Test(arguments: [0x6969, 0xFF53_4D42, 0xFE53_4D42, 0x517B, 0x6573_5546, 0x00C3_6400])
    func aNetworkFileSystemsFolderStampIsNotTrusted(type: Int) {
        #expect(!StateSnapshot.trustsFolderStamps(ofFileSystem: type))
    }

    @Test(arguments: [0xEF53, 0x0102_1994, 0x5846_5342, 0x9123_683E])  // ext4, tmpfs, XFS, Btrfs
    func aLocalFileSystemsFolderStampIsTrusted(type: Int) {
        #expect(StateSnapshot.trustsFolderStamps(ofFileSystem: type))
    }

    @Test func theFolderTheTestsRunInIsLocal() {
        let folder = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(folder) }
        let type = flowrun_file_system_type(folder)
        #expect(type > 0)
        #expect(StateSnapshot.trustsFolderStamps(of: folder) == !StateSnapshot.sharedFileSystems.contains(type))
    }
}
