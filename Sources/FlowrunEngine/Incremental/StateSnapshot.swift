#if canImport(Glibc)
import Glibc
#endif
import CFlowrunSystem
import FlowrunValues

/// The state files one workflow's run read, copied into one file
/// (`.flowrun/state/snapshots/KEY`) with the stamp the `state` folder had
/// before they were read: a later run that finds the folder's stamp
/// unchanged reads that one file instead of opening each task's (43 files,
/// four system calls each, in the c-project no-op run).
///
/// Why the folder's stamp is enough: flowrun never edits a state file in
/// place; it writes a new one and renames it over the old, and a rename, a
/// new file or a removed one sets the folder's mtime and ctime. The stamp
/// is trusted only if it was settled (`FileStamp.isSettled`) when the
/// snapshot's run took it, before reading anything: a change after that
/// cannot leave the folder's stamp as it was, whatever the clock's tick.
/// The snapshots live in a folder of their own, so writing one does not
/// change the stamp it holds.
///
/// Layout, in bytes: `flowrun state snapshot 1\n`, the folder's stamp
/// (`FileStamp.text`) and `\n`, then for each state file its name, a
/// space and either `-` (no readable file) or its length, `\n`, and that
/// many bytes. Anything else, or a name that is not a state file's, and the
/// snapshot is not used: each file is read as before.
struct StateSnapshot: Equatable {
    static let folderName = "snapshots"
    /// Larger snapshots are not written (a state that big is read file by
    /// file): a run reads the whole snapshot, whichever tasks it runs, and a
    /// narrow target of a 27 MB state took 60 MB where it took 12.
    static let bytesAtMost = 8 << 20

    /// File systems whose clients cache a folder's attributes (NFS for up
    /// to a minute) or that another host changes: there the folder's stamp
    /// can be stale while a state file is new, so such a state is read file
    /// by file (an open by name revalidates). NFS, SMB/CIFS (three magics),
    /// FUSE (sshfs and the like), Ceph, AFS, 9P, GFS2, OCFS2, Lustre.
    static let sharedFileSystems: Set<Int> = [
        0x6969, 0x517B, 0xFF53_4D42, 0xFE53_4D42, 0x6573_5546, 0x00C3_6400, 0x5346_414F, 0x0102_1997,
        0x0116_1970, 0x7461_636F, 0x0BD0_0BD0,
    ]

    /// Whether `folder` is on a file system whose folder stamps this host can trust (`sharedFileSystems`).
    static func trustsFolderStamps(of folder: Int32) -> Bool {
        let type = flowrun_file_system_type(folder)
        return type >= 0 && trustsFolderStamps(ofFileSystem: type)
    }

    static func trustsFolderStamps(ofFileSystem type: Int) -> Bool {
        !sharedFileSystems.contains(type)
    }

    private static let header = "flowrun state snapshot 1\n"

    /// The `state` folder's stamp before the files were read.
    var folderStamp: FileStamp
    /// By state file name: its bytes, or nil when there was no readable file.
    var files: [String: [UInt8]?]

    /// A state file's name: 64 lowercase hex digits and `.json`.
    static func isStateFileName(_ name: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard name.count == 69, name.suffix(5).elementsEqual(".json".utf8) else { return false }
        return name.prefix(64).allSatisfy(isLowercaseHex)
    }

    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    func encoded() -> [UInt8] {
        var bytes = Array(Self.header.utf8)
        bytes += Array(folderStamp.text.utf8)
        bytes.append(UInt8(ascii: "\n"))
        // Sorted: the same state makes the same bytes.
        for name in files.keys.sorted() {
            bytes += Array(name.utf8)
            bytes.append(UInt8(ascii: " "))
            if let content = files[name] ?? nil {
                bytes += Array(String(content.count).utf8)
                bytes.append(UInt8(ascii: "\n"))
                bytes += content
            } else {
                bytes += Array("-\n".utf8)
            }
        }
        return bytes
    }

    /// The snapshot in `bytes`, or nil if they are not exactly the layout above.
    init?(bytes: [UInt8]) {
        guard let (stamp, ranges) = bytes.withUnsafeBufferPointer(Self.parse) else { return nil }
        self.init(folderStamp: stamp, files: ranges.mapValues { range in range.map { Array(bytes[$0]) } })
    }

    /// Read in place, each line found by `memchr` (the generic slice
    /// operations cost 6,000 instructions an entry): the folder's stamp and
    /// where each state file's bytes lie (nil: no readable file).
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> (FileStamp, [String: Range<Int>?])? {
        guard let base = bytes.baseAddress else { return nil }
        var index = 0
        func line() -> UnsafeBufferPointer<UInt8>? {
            guard index < bytes.count, let end = memchr(base + index, Int32(UInt8(ascii: "\n")), bytes.count - index) else { return nil }
            let length = UnsafeRawPointer(end) - UnsafeRawPointer(base + index)
            defer { index += length + 1 }
            return UnsafeBufferPointer(start: base + index, count: length)
        }
        guard let first = line(), first.elementsEqual(header.utf8.dropLast()),
              let stampLine = line(), let stamp = FileStamp(utf8: stampLine) else { return nil }
        var files: [String: Range<Int>?] = [:]
        while index < bytes.count {
            // NAME SIZE: the name is a state file's, 69 bytes, then one space.
            guard let entry = line(), entry.count > 70, entry[69] == UInt8(ascii: " "),
                  isStateFileName(entry[0..<69]) else { return nil }
            let key = String(decoding: UnsafeBufferPointer(rebasing: entry[0..<69]), as: UTF8.self)
            guard files[key] == nil else { return nil }
            let size = entry[70...]
            if size.count == 1 && size.first == UInt8(ascii: "-") {
                files[key] = .some(nil)
                continue
            }
            guard let count = decimal(size), count <= bytes.count - index else { return nil }
            files[key] = index..<(index + count)
            index += count
        }
        return (stamp, files)
    }

    init(folderStamp: FileStamp, files: [String: [UInt8]?]) {
        self.folderStamp = folderStamp
        self.files = files
    }

    private static func decimal(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        guard !digits.isEmpty, digits.count <= 10 else { return nil }
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }
}

extension StateSnapshot {
    /// Writes the snapshot under `name`: to a fresh temporary name, then
    /// renamed into place (a reader finds the old one or the new, whole).
    /// Only into a snapshot folder that exists already and is ours: making
    /// it changes the `state` folder's stamp, which this snapshot holds.
    func write(in state: Int32, name: String) {
        let bytes = encoded()
        guard bytes.count <= Self.bytesAtMost else { return }
        let folder = openat(state, Self.folderName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else {
            // Made for the next run's snapshot (an older state folder has none).
            if errno == ENOENT { mkdirat(state, Self.folderName, 0o700) }
            return
        }
        defer { close(folder) }
        var info = stat()
        guard fstat(folder, &info) == 0, info.st_uid == geteuid() else { return }
        var generator = SystemRandomNumberGenerator()
        let temporary = name + ".tmp-" + String(generator.next() as UInt64, radix: 16)
        let file = openat(folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard file >= 0 else { return }
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(file, $0.baseAddress! + offset, bytes.count - offset) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            offset += count
        }
        close(file)
        if offset != bytes.count || renameat(folder, temporary, folder, name) != 0 {
            unlinkat(folder, temporary, 0)
            return
        }
        Self.removeLeftovers(in: folder)
    }

    /// How old a temporary must be to be a leftover: a writer renames its
    /// own within milliseconds.
    static let leftoverAge: time_t = 60

    /// Removes the temporaries (`KEY.tmp-HEX`) a writer killed between
    /// making one and renaming it left in the snapshot folder: nothing
    /// else lists the folder, and each could be a whole snapshot (up to
    /// `bytesAtMost`), one more each time. Done after a snapshot is
    /// written, which is rare (once after the state changed), and only to
    /// ours older than `leftoverAge`: a writer at work keeps its own. Not
    /// followed through a link, nor anything else touched.
    static func removeLeftovers(in folder: Int32) {
        let now = time(nil)
        for name in (FolderListing.names(in: folder) ?? []).filter(isTemporaryName) {
            var info = stat()
            guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG,
                  info.st_uid == geteuid(), now - info.st_mtim.tv_sec >= leftoverAge else { continue }
            unlinkat(folder, name, 0)
        }
    }

    /// A snapshot's temporary name as `write` makes it: 64 lowercase hex
    /// digits, `.tmp-`, one to 16 lowercase hex digits.
    static func isTemporaryName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count > 69, bytes.count <= 85 else { return false }
        return bytes[0..<64].allSatisfy(isLowercaseHex) && bytes[64..<69].elementsEqual(".tmp-".utf8) && bytes[69...].allSatisfy(isLowercaseHex)
    }
}
