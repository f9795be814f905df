#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues

/// Bytes set aside during a run to be copied into a record file at its end
/// (the summary's rows of fan-out members that have been let go): kept in
/// an unnamed file in the run folder rather than in memory, so a million
/// members cost disk, not RAM. The file is unlinked as soon as it is made:
/// nothing is left behind, whatever happens to flowrun.
package struct RecordSpill {
    private var descriptor: Int32 = -1
    private var pending: [UInt8] = []
    /// Bytes appended so far (written or pending).
    package private(set) var byteCount = 0
    private var failed = false

    package init() {}

    /// Appends `bytes`; they reach the disk in pieces of 256 KiB.
    package mutating func append(_ bytes: [UInt8], in record: RunRecord) {
        pending += bytes
        byteCount += bytes.count
        if pending.count >= 256 * 1024 { flush(in: record) }
    }

    /// Appends `text` as a JSON string, after a comma unless it is the first:
    /// a fan-out's member names and items, one per member, with no string
    /// or array made for each.
    package mutating func appendQuoted(_ text: String, in record: RunRecord) {
        let before = pending.count
        if byteCount > 0 { pending.append(UInt8(ascii: ",")) }
        JSONValue.appendQuoted(text, to: &pending)
        byteCount += pending.count - before
        if pending.count >= 256 * 1024 { flush(in: record) }
    }

    private mutating func flush(in record: RunRecord) {
        defer { pending.removeAll(keepingCapacity: true) }
        guard !failed, !pending.isEmpty else { return }
        if descriptor < 0 {
            let name = ".spill-\(getpid())-\(UInt32.random(in: 0 ... .max))"
            let made = openat(record.folder.descriptor, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard made >= 0 else {
                failed = true
                record.folder.noteFailure("cannot make a spill file in \(record.directory): \(String(cString: strerror(errno)))")
                return
            }
            unlinkat(record.folder.descriptor, name, 0)
            descriptor = made
        }
        if !pending.withUnsafeBytes({ writeAll(descriptor, $0) }) {
            failed = true
            record.folder.noteFailure("cannot write a spill file in \(record.directory): \(String(cString: strerror(errno)))")
        }
    }

    /// Hands `body` everything appended, in order, 64 KiB at a time, then
    /// forgets it.
    package mutating func drain(in record: RunRecord, _ body: (ArraySlice<UInt8>) -> Void) {
        if descriptor >= 0 {
            flush(in: record)
            lseek(descriptor, 0, SEEK_SET)
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                body(chunk[..<count])
            }
            close(descriptor)
            descriptor = -1
        } else if !pending.isEmpty {
            body(pending[...])
        }
        pending = []
        byteCount = 0
    }
}
