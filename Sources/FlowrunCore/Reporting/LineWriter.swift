import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Writes report lines to a descriptor: at once on a terminal, else gathered
/// and written at most every 100 ms (or per 32 KiB), the way stdio buffers a
/// pipe — 20,000 tasks should not cost 60,000 write calls. `flush()` at the end.
final class LineWriter: Sendable {
    private let descriptor: Int32
    private let isTerminal: Bool
    /// Pending text and whether a flush is scheduled, behind one lock: lines
    /// come from the engine's queue, the timed flush from a global queue.
    private let pending = Mutex<(text: String, scheduled: Bool)>(("", false))

    init(descriptor: Int32) {
        self.descriptor = descriptor
        isTerminal = isatty(descriptor) == 1
    }

    func write(_ text: String) {
        guard !isTerminal else {
            writeAll(descriptor, text)
            return
        }
        let (full, schedule) = pending.withLock { pending -> (String?, Bool) in
            pending.text += text
            if pending.text.utf8.count >= 32 * 1024 {
                defer { pending.text = "" }
                return (pending.text, false)
            }
            guard !pending.scheduled else { return (nil, false) }
            pending.scheduled = true
            return (nil, true)
        }
        if let full { writeAll(descriptor, full) }
        if schedule {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in flush() }
        }
    }

    func flush() {
        let text = pending.withLock { pending -> String in
            defer { pending = ("", false) }
            return pending.text
        }
        if !text.isEmpty { writeAll(descriptor, text) }
    }
}
