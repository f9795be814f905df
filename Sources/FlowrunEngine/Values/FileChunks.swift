#if canImport(Glibc)
import Glibc
#endif

/// A file read 64 KiB at a time into a buffer that keeps only what its
/// reader has not consumed (`start` onwards), or a text held whole: what
/// the fan-out's readers of lines and of JSON elements read through.
final class FileChunks {
    let path: String
    private var descriptor: Int32 = -1
    private(set) var buffer: [UInt8]
    /// The first byte not consumed yet.
    var start = 0
    private(set) var atEnd: Bool

    /// `text`, whole.
    init(text: String) {
        path = ""
        buffer = Array(text.utf8)
        atEnd = true
    }

    /// The file at `path` (never through a link).
    init(contentsOf path: String) throws(FanOutFileError) {
        self.path = path
        buffer = []
        atEnd = false
        descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw FanOutFileError(path: path, errno: errno) }
        buffer.reserveCapacity(1 << 16)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Drops the consumed bytes and appends the next chunk (`atEnd` at the end of the file).
    func readMore() throws(FanOutFileError) {
        if start > 0 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        let chunk = 1 << 16
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + old, chunk) }
            if count < 0 {
                if errno == EINTR { continue }
                let reason = errno
                buffer.removeSubrange(old...)
                atEnd = true
                throw FanOutFileError(path: path, errno: reason)
            }
            buffer.removeSubrange((old + count)...)
            if count == 0 {
                atEnd = true
                close(descriptor)
                descriptor = -1
            }
            return
        }
    }
}
