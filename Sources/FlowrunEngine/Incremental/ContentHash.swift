#if canImport(Glibc)
import Glibc
#endif
import FlowrunPlanning

/// SHA-256 of what a path holds: a file's bytes, or — for a folder named
/// as a source — its sorted entry names, so that `sources: [src]` notices a
/// file added or removed, not an edit (a listing task's sources).
package enum ContentHash {
    /// Nil when the path cannot be read.
    package static func of(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        if info.st_mode & S_IFMT == S_IFDIR { return ofListing(path) }
        // A named pipe, socket or device that a glob matches is never read: opening a
        // FIFO blocks until a writer comes (the run hung for good, deaf to SIGTERM, on a
        // `mkfifo src/x.c` anyone with write access to the folder could make), and a
        // device may never end. What it is stands for its content.
        guard info.st_mode & S_IFMT == S_IFREG else { return special(info) }
        // O_NONBLOCK: replaced by a FIFO between stat and open, it still does not block.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var opened = stat()
        guard fstat(descriptor, &opened) == 0 else { return nil }
        guard opened.st_mode & S_IFMT == S_IFREG else { return special(opened) }
        var sha = SHA256()
        sha.update("file\u{0}")
        let size = 64 * 1024
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer.baseAddress, size)
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            sha.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return sha.finalize()
    }

    /// A file that is not a regular one: its type and device numbers.
    private static func special(_ info: stat) -> String {
        var sha = SHA256()
        sha.update("special\u{0}")
        sha.field(String(info.st_mode & S_IFMT))
        sha.field(String(info.st_rdev))
        return sha.finalize()
    }

    private static func ofListing(_ path: String) -> String? {
        guard let handle = opendir(path) else { return nil }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        var sha = SHA256()
        sha.update("folder\u{0}")
        for name in names.sorted() { sha.field(name) }
        return sha.finalize()
    }
}
