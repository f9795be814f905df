import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import FlowrunEvents

/// Hands report lines to a `ConsoleWriter`: at once on a terminal, else
/// gathered and handed over at most every 100 ms (or per 32 KiB), the way
/// stdio buffers a pipe — 20,000 tasks should not cost 60,000 write calls.
/// `flush()` at the end. Never waits for the reader (see `ConsoleWriter`).
final class LineWriter: Sendable {
    let console: ConsoleWriter
    private let isTerminal: Bool
    /// Pending text and whether a flush is scheduled, behind one lock: lines
    /// come from the engine's queue and the output thread, the timed flush
    /// from a global queue.
    private let pending = Mutex<(text: String, scheduled: Bool)>(("", false))

    init(descriptor: Int32) {
        console = ConsoleWriter.shared(for: descriptor)
        isTerminal = isatty(descriptor) == 1
    }

    func write(_ text: String) {
        guard !isTerminal else {
            console.write(text)
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
        if let full { console.write(full) }
        if schedule {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in flush() }
        }
    }

    /// Hands over what is gathered; a writer of its own (not stdout's or
    /// stderr's, which `ConsoleWriter.settle` drains at exit) is drained here.
    func flush() {
        let text = pending.withLock { pending -> String in
            defer { pending = ("", false) }
            return pending.text
        }
        if !text.isEmpty { console.write(text) }
    }

    /// The last flush of a run.
    func finish() {
        flush()
        if !console.isStandard { console.drain() }
    }
}
