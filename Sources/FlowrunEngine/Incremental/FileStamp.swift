#if canImport(Glibc)
import Glibc
#endif

/// What `stat` says about a source or generated file, kept beside its
/// content hash so that an unchanged file is not read again (git's index
/// rule): the same device, inode, type, size, mtime and ctime as when it was
/// hashed means the same content — but only for a stamp that was settled
/// when the file was read (`isSettled`), or a write in the same clock tick
/// after the read would leave the stamp as it was (git's "racy clean").
package struct FileStamp: Sendable, Hashable {
    var device: UInt64
    var inode: UInt64
    var type: UInt32
    var size: Int64
    /// Nanoseconds since the epoch.
    var modified: Int64
    var changed: Int64

    /// How long before a file was read its mtime and ctime must be for its
    /// stamp to be trusted. The kernel stamps a write with a coarse clock
    /// (one tick, up to 4 ms) and some file systems round it down further
    /// (FAT: to 2 s; most: 1 ns): a write right after the read must get a
    /// ctime later than any trusted stamp's, whatever the rounding. Costs a
    /// second read of files changed in the last 2 s, nothing more.
    package static let settledMargin: Int64 = 2_000_000_000

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        type = UInt32(info.st_mode & S_IFMT)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }

    package init(device: UInt64, inode: UInt64, type: UInt32, size: Int64, modified: Int64, changed: Int64) {
        self.device = device
        self.inode = inode
        self.type = type
        self.size = size
        self.modified = modified
        self.changed = changed
    }

    /// The stamp of what `path` names (links followed, as the hash reads it).
    package static func of(_ path: String) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStamp(info)
    }

    /// Whether a content read that started at `readStart` (the kernel's
    /// coarse wall clock, in nanoseconds, taken before the `stat`) may be
    /// found again by this stamp: its mtime and ctime were both at least
    /// `settledMargin` old then. A later write sets the ctime to the time of
    /// that write (no call sets it back), so it cannot leave a settled stamp
    /// unchanged; a stamp in the future (a clock set back, `touch -d`) is
    /// never settled.
    package func isSettled(readStart: Int64) -> Bool {
        max(modified, changed) <= readStart - Self.settledMargin
    }

    /// Whether the file system keeps this file's times finer than whole
    /// seconds (ext2/ext3 with 128-byte inodes, FAT and some NFS servers do
    /// not): there, a clock set back into the second of the last change
    /// lets a later change leave mtime and ctime, hence the stamp, as they were.
    var hasSubsecondTimes: Bool {
        modified % 1_000_000_000 != 0 || changed % 1_000_000_000 != 0
    }

    /// The kernel's coarse wall clock, the one it stamps writes with, in nanoseconds.
    package static func coarseNow() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

extension FileStamp {
    /// As `.flowrun/state` keeps it: `device:inode:type:size:mtime:ctime`, in decimal.
    var text: String {
        "\(device):\(inode):\(type):\(size):\(modified):\(changed)"
    }

    init?(text: String) {
        var text = text
        guard let stamp = text.withUTF8({ FileStamp(utf8: $0) }) else { return nil }
        self = stamp
    }

    /// Read byte by byte into six fields on the stack: a state file holds
    /// one stamp per source, and 6,370 of them are read in a 70-task no-op
    /// run (`split` over Characters was a fifth of it, an array per stamp 3 %).
    init?(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        var fields: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
        var field = 0
        var value: UInt64 = 0
        var digits = 0
        func store(_ value: UInt64, at field: Int) {
            switch field {
            case 0: fields.0 = value
            case 1: fields.1 = value
            case 2: fields.2 = value
            case 3: fields.3 = value
            case 4: fields.4 = value
            default: fields.5 = value
            }
        }
        for byte in bytes {
            if byte == UInt8(ascii: ":") {
                guard digits > 0, field < 5 else { return nil }
                store(value, at: field)
                field += 1
                value = 0
                digits = 0
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 19 else { return nil }
            value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
            digits += 1
        }
        guard digits > 0, field == 5 else { return nil }
        fields.5 = value
        guard fields.2 <= UInt64(UInt32.max), fields.3 <= UInt64(Int64.max), fields.4 <= UInt64(Int64.max), fields.5 <= UInt64(Int64.max)
        else { return nil }
        self.init(
            device: fields.0, inode: fields.1, type: UInt32(fields.2), size: Int64(fields.3), modified: Int64(fields.4),
            changed: Int64(fields.5))
    }
}
