#if canImport(Glibc)
import Glibc
#endif

/// A snapshot as a run reads it: the file mapped (`mmap`, read-only), each
/// state file's bytes read where they lie. Read into memory and copied file
/// by file, BoringSSL's 1.1 MB snapshot took 530 page faults more than the
/// 70 files it stands for; mapped from the page cache, a few dozen.
/// Immutable once made; the mapping lives as long as the object.
final class MappedStateSnapshot: @unchecked Sendable {
    let folderStamp: FileStamp
    private let files: [String: Range<Int>?]
    private let base: UnsafeRawPointer
    private let count: Int

    private init(folderStamp: FileStamp, files: [String: Range<Int>?], base: UnsafeRawPointer, count: Int) {
        self.folderStamp = folderStamp
        self.files = files
        self.base = base
        self.count = count
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: base), count) }

    /// The snapshot named `name` in `state`'s snapshot folder, if it is a
    /// plain file of ours that reads as one; nothing is followed through a
    /// link. flowrun replaces a snapshot by a rename, never in place, so
    /// the mapped file does not change under the run.
    static func read(in state: Int32, name: String) -> MappedStateSnapshot? {
        let folder = openat(state, StateSnapshot.folderName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else { return nil }
        defer { close(folder) }
        // O_NONBLOCK: a named pipe at the name is refused, not waited on.
        let file = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(),
              info.st_size > 0, info.st_size <= StateSnapshot.bytesAtMost else { return nil }
        let count = Int(info.st_size)
        guard let mapped = mmap(nil, count, PROT_READ, MAP_PRIVATE, file, 0), mapped != MAP_FAILED else { return nil }
        let base = UnsafeRawPointer(mapped)
        guard let (stamp, files) = StateSnapshot.parse(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: count)) else {
            munmap(mapped, count)
            return nil
        }
        return MappedStateSnapshot(folderStamp: stamp, files: files, base: base, count: count)
    }

    /// Whether the snapshot knows `name`: `.some(nil)` for a file it knows is not there.
    func entry(_ name: String) -> Range<Int>?? {
        files[name]
    }

    /// `body` over the bytes at `range` (an entry's).
    func withBytes<Result>(_ range: Range<Int>, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        body(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self) + range.lowerBound, count: range.count))
    }

    /// Every entry, copied out: for the next snapshot written.
    func copiedFiles() -> [String: [UInt8]?] {
        files.mapValues { range in range.map { range in withBytes(range) { Array($0) } } }
    }
}
