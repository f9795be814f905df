#if canImport(Glibc)
import Glibc
#endif

/// Small kernel files (/proc, /sys/fs/cgroup) read and written whole, with
/// system calls only: no Foundation in these layers.
package enum SystemFile {
    /// The file's text (at most 64 KiB), nil if it cannot be read.
    package static func read(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 64 * 1024 {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first whole number in the file (`memory.peak`, `cpu.cfs_quota_us`).
    package static func number(_ path: String) -> Int64? {
        read(path).flatMap { Int64($0.split(whereSeparator: { $0 == " " || $0 == "\n" }).first ?? "") }
    }

    /// Writes `text` to an existing file (a cgroup's control file); 0 or the errno.
    @discardableResult
    package static func write(_ text: String, to path: String) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        let written = text.withCString { Glibc.write(descriptor, $0, strlen($0)) }
        return written < 0 ? errno : 0
    }

    /// `KEY VALUE` lines (`memory.events`, `memory.oom_control`): the value of `key`.
    package static func field(_ key: String, in text: String?) -> Int64? {
        guard let text else { return nil }
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2, words[0] == key { return Int64(words[1]) }
        }
        return nil
    }
}
