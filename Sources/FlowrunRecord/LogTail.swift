#if canImport(Glibc)
import Glibc
#endif

/// The last lines of a log, read from its end (never the whole file).
enum LogTail {
    /// Reads `name` in the folder `folder` (a descriptor), never through a link.
    static func read(_ folder: Int32, _ name: String, lines: Int, maxBytes: Int = 64 * 1024) -> [String] {
        let last = lastBytes(folder, name, maxBytes: maxBytes)
        return self.lines(last.bytes, lines: lines, cut: last.cut)
    }

    /// The last `maxBytes` of file `name` in `folder`, and whether that is
    /// not all of it; none if it is not a plain file.
    static func lastBytes(_ folder: Int32, _ name: String, maxBytes: Int = 64 * 1024) -> (bytes: [UInt8], cut: Bool) {
        let descriptor = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return ([], false) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return ([], false) }
        let size = lseek(descriptor, 0, SEEK_END)
        guard size > 0 else { return ([], false) }
        let start = max(0, Int(size) - maxBytes)
        var buffer = [UInt8](repeating: 0, count: Int(size) - start)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(start)) }
        guard count > 0 else { return ([], false) }
        return (Array(buffer[..<count]), start > 0)
    }

    /// The last `lines` lines of `bytes`; `cut`: the bytes start mid-log,
    /// so their first line may be a part of one.
    static func lines(_ bytes: [UInt8], lines: Int, cut: Bool) -> [String] {
        guard !bytes.isEmpty else { return [] }
        var text = Substring(String(decoding: bytes, as: UTF8.self))
        if text.hasSuffix("\n") { text = text.dropLast() }
        var result = text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).map(String.init)
        if cut, result.count == lines + 1 { result.removeFirst() }
        return result
    }
}
