#if canImport(Glibc)
import Glibc
#endif

/// Bytes on their way to a file: appended to `bytes`, written out in
/// pieces of 64 KiB or more. After a write fails, nothing more is written
/// and `failure` says why.
package struct ChunkedFileWriter {
    let descriptor: Int32
    package var bytes: [UInt8] = []
    /// The errno of the first write that failed.
    private(set) var failure: Int32?

    init(descriptor: Int32) {
        self.descriptor = descriptor
        bytes.reserveCapacity(128 * 1024)
    }

    /// Writes what has gathered once it is 64 KiB or more.
    package mutating func flushIfFull() {
        if bytes.count >= 64 * 1024 { flush() }
    }

    mutating func flush() {
        if failure == nil, !bytes.withUnsafeBytes({ writeAll(descriptor, $0) }) { failure = errno }
        bytes.removeAll(keepingCapacity: true)
    }
}
