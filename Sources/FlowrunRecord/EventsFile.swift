import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import FlowrunEvents

/// `events.jsonl`: events encoded as JSON lines and appended. With
/// `inBackground`, batches of 64 events or more are encoded and written on
/// a queue of the file's own, in order, so that the engine's thread does
/// not spend its time on JSON (a million short members' lines were a tenth
/// of it); smaller ones, with nothing in flight, at once;
/// `wait()` returns once every batch handed in is written. At most
/// `eventsInFlightAtMost` events wait there: past that, `write` waits.
///
/// If a write fails (disk full, file size limit), the file is cut back to
/// its last whole line, the record notes the failure, and no more lines
/// are written.
final class EventsFile: @unchecked Sendable {
    // @unchecked: `length` and `failed` are touched only by the batch being
    // written (on `queue`, or inline when not in the background).
    private let descriptor: Int32
    private let folder: RunFolder
    private let directory: String
    /// Bytes of whole lines in the file: where a failed write is cut back to.
    private var length: off_t = 0
    private var failed = false
    private let queue: DispatchQueue?
    private let inFlight = Mutex(0)
    private static let eventsInFlightAtMost = 8 * 1024
    /// Fewer events than this, with none in flight, are written on the caller's thread.
    private static let eventsWrittenInline = 64

    init(descriptor: Int32, folder: RunFolder, directory: String, inBackground: Bool) {
        self.descriptor = descriptor
        self.folder = folder
        self.directory = directory
        queue = inBackground ? DispatchQueue(label: "flowrun.events") : nil
    }

    func write(_ events: [RunEvent]) {
        guard !events.isEmpty else { return }
        guard let queue else {
            encodeAndWrite(events)
            return
        }
        // A step's few lines (a task's end, the next one's start) are written
        // at once: waking the queue's thread for them cost more than the
        // JSON (2,000 flat tasks at max_parallel 2, where flowrun's CPU is
        // the run's wall time). Only when nothing is in flight, so lines stay in order.
        let (inline, behind) = inFlight.withLock { count -> (Bool, Bool) in
            if count == 0 && events.count < Self.eventsWrittenInline { return (true, false) }
            count += events.count
            return (false, count > Self.eventsInFlightAtMost)
        }
        if inline {
            encodeAndWrite(events)
            return
        }
        queue.async { [self] in
            encodeAndWrite(events)
            inFlight.withLock { $0 -= events.count }
        }
        if behind { wait() }
    }

    /// Returns once every batch handed in is written.
    func wait() {
        queue?.sync {}
    }

    private func encodeAndWrite(_ events: [RunEvent]) {
        guard !failed else { return }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(events.count * 96)
        for event in events {
            event.appendJSONLine(to: &bytes)
            bytes.append(UInt8(ascii: "\n"))
        }
        let (written, reason) = bytes.withUnsafeBytes { bytes -> (Int, Int32) in
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return (offset, errno)
                }
                if count == 0 { return (offset, EIO) }
                offset += count
            }
            return (offset, 0)
        }
        guard reason != 0 else {
            length += off_t(written)
            return
        }
        failed = true
        let whole = bytes[..<written].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        length += off_t(whole)
        // The cut can fail too (an I/O error): then the file may end mid-line, and the message says so.
        let cut = ftruncate(descriptor, length) == 0 ? "" : "; cutting it back to its last whole line failed too: \(String(cString: strerror(errno)))"
        folder.noteFailure("cannot write \(directory)/events.jsonl: \(String(cString: strerror(reason)))" + cut)
    }
}
