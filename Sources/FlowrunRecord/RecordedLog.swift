#if canImport(Glibc)
import Glibc
#endif

/// One task's log as a reader finds it in a run record: its entries in
/// `logs/small.pack` (`SmallLogPack`), then its own file
/// (`logs/000/000042-NAME.log`), either or both absent. Every reader of a
/// log goes through here: `flowrun logs` (and `-f`), `show`'s failure
/// tails, the engine's own `log_tail`.
package struct RecordedLog {
    /// `logs/` of the run, and the log's shard folder in it (-1: none yet).
    let logs: Int32
    let shard: Int32
    /// `000042-NAME.log`
    let fileName: String

    package init(logs: Int32, shard: Int32, fileName: String) {
        self.logs = logs
        self.shard = shard
        self.fileName = fileName
    }

    /// The stem the pack's index names the log by: `000042-NAME`.
    var stem: Substring { fileName.hasSuffix(".log") ? fileName.dropLast(4) : Substring(fileName) }

    /// Its entries in the pack, in order, from the index's byte `from` on;
    /// and where the index's whole lines end (to read on from there).
    package func packedEntries(from: Int = 0) -> (entries: [(offset: Int, length: Int)], indexEnd: Int) {
        guard logs >= 0 else { return ([], from) }
        let index = openat(logs, SmallLogPack.indexName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard index >= 0 else { return ([], from) }
        defer { close(index) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var offset = off_t(from)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(index, $0.baseAddress, $0.count, offset) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[..<count]
            offset += off_t(count)
        }
        guard let lastBreak = bytes.lastIndex(of: UInt8(ascii: "\n")) else { return ([], from) }
        let wanted = Array(stem.utf8)
        var entries: [(offset: Int, length: Int)] = []
        var start = 0
        while start <= lastBreak {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n"))!
            let line = bytes[start..<end]
            start = end + 1
            // `OFFSET LENGTH STEM`: a cheap look at the stem first.
            guard line.count > wanted.count, line.suffix(wanted.count).elementsEqual(wanted) else { continue }
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
            guard fields.count == 3, fields[2].elementsEqual(wanted),
                  let entryOffset = Int(String(decoding: fields[0], as: UTF8.self)),
                  let length = Int(String(decoding: fields[1], as: UTF8.self)) else { continue }
            entries.append((entryOffset, length))
        }
        return (entries, from + lastBreak + 1)
    }

    /// The bytes of pack entries.
    package func packedBytes(_ entries: [(offset: Int, length: Int)]) -> [UInt8] {
        guard !entries.isEmpty, logs >= 0 else { return [] }
        let pack = openat(logs, SmallLogPack.packName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard pack >= 0 else { return [] }
        defer { close(pack) }
        var bytes: [UInt8] = []
        for entry in entries {
            var chunk = [UInt8](repeating: 0, count: entry.length)
            var done = 0
            while done < entry.length {
                let count = chunk.withUnsafeMutableBytes { pread(pack, $0.baseAddress! + done, entry.length - done, off_t(entry.offset + done)) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                done += count
            }
            bytes += chunk[..<done]
        }
        return bytes
    }

    /// The last `lines` lines: of its file's last 64 KiB, after what the
    /// pack holds of it.
    package func tail(lines: Int) -> [String] {
        Self.tail(packed: packedBytes(packedEntries().entries), shard: shard, fileName: fileName, lines: lines)
    }

    /// The last `lines` lines of a log whose pack entries are `packed`.
    static func tail(packed: [UInt8], shard: Int32, fileName: String, lines: Int) -> [String] {
        let file = shard >= 0 ? LogTail.lastBytes(shard, fileName) : (bytes: [], cut: false)
        if file.cut { return LogTail.lines(file.bytes, lines: lines, cut: true) }
        return LogTail.lines(packed + file.bytes, lines: lines, cut: false)
    }
}
