#if canImport(Glibc)
import Glibc
#endif

/// The last lines of a log file, read from its end (never the whole file).
enum LogTail {
    /// Reads `name` in the folder `folder` (a descriptor), never through a link.
    static func read(_ folder: Int32, _ name: String, lines: Int, maxBytes: Int = 64 * 1024) -> [String] {
        let descriptor = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return [] }
        let size = lseek(descriptor, 0, SEEK_END)
        guard size > 0 else { return [] }
        let start = max(0, Int(size) - maxBytes)
        var buffer = [UInt8](repeating: 0, count: Int(size) - start)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(start)) }
        guard count > 0 else { return [] }
        var text = Substring(String(decoding: buffer[..<count], as: UTF8.self))
        if text.hasSuffix("\n") { text = text.dropLast() }
        var result = text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).map(String.init)
        if start > 0, result.count == lines + 1 { result.removeFirst() }
        return result
    }
}
