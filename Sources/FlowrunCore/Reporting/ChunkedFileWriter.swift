/// Bytes on their way to a file: appended to `bytes`, written out in
/// pieces of 64 KiB or more.
struct ChunkedFileWriter {
    let descriptor: Int32
    var bytes: [UInt8] = []

    init(descriptor: Int32) {
        self.descriptor = descriptor
        bytes.reserveCapacity(128 * 1024)
    }

    /// Writes what has gathered once it is 64 KiB or more.
    mutating func flushIfFull() {
        if bytes.count >= 64 * 1024 { flush() }
    }

    mutating func flush() {
        bytes.withUnsafeBytes { _ = writeAll(descriptor, $0) }
        bytes.removeAll(keepingCapacity: true)
    }
}
