import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import FlowrunEvents

/// Hands report lines to a `ConsoleWriter`: at once on a terminal, else
/// gathered and handed over at most every 100 ms (or per 512 entries), the
/// way stdio buffers a pipe — 20,000 tasks should not cost 60,000 write
/// calls. `flush()` at the end. Never waits for the reader (see `ConsoleWriter`).
///
/// Not on a terminal, an event's line may be handed in unformatted
/// (`write(event:)`): it is formatted when it is handed over, on the
/// writer's own queue, not on the engine's. A million short tasks' start
/// and end lines were a fifth of the engine's time. If that queue falls
/// far behind (4 K entries), the caller formats the lines itself: the
/// formatting left to that queue stays bounded, not the number of lines
/// waiting (a reader that never catches up is bounded by `ConsoleWriter`).
final class LineWriter: Sendable {
    let console: ConsoleWriter
    private let isTerminal: Bool
    /// Makes an event's line(s), with the line break, on whichever thread hands them over.
    private let format: @Sendable (RunEvent) -> String

    private enum Entry: Sendable {
        case text(String)
        case event(RunEvent)
    }

    /// What waits to be handed over, and whether a hand-over is scheduled
    /// (timed, or at once when enough waits), behind one lock: lines come
    /// from the engine's queue and the output thread, hand-overs run on `handOver`.
    private struct Pending: Sendable {
        var entries: [Entry] = []
        var timedFlush = false
        var promptFlush = false
    }
    private let pending = Mutex(Pending())
    /// Serial: hand-overs happen in order, one at a time.
    private let handOver = DispatchQueue(label: "flowrun.lines")
    private static let entriesPerHandOver = 512
    /// Past this many waiting entries, `write(event:)` formats on the caller's thread.
    private static let entriesAtMost = 4 * 1024

    /// No timed hand-over: a run that starts no task waits for nothing, and
    /// its lines are handed over at its end (`finish`), or per 512. A timer
    /// would be a Dispatch thread of its own, for a run that makes none else.
    private let handsOverAtEnd: Bool

    init(descriptor: Int32, handsOverAtEnd: Bool = false, format: @escaping @Sendable (RunEvent) -> String) {
        console = ConsoleWriter.shared(for: descriptor)
        isTerminal = isatty(descriptor) == 1
        self.handsOverAtEnd = handsOverAtEnd
        self.format = format
    }

    func write(_ text: String) {
        add(.text(text))
    }

    /// `format(event)`, now on a terminal, else when handed over.
    func write(event: RunEvent) {
        add(.event(event))
    }

    private func add(_ entry: Entry) {
        guard !isTerminal else {
            console.write(Self.text(of: entry, format))
            return
        }
        let (schedule, prompt) = pending.withLock { pending -> (Bool, Bool) in
            if pending.entries.count >= Self.entriesAtMost, case .event(let event) = entry {
                pending.entries.append(.text(format(event)))
            } else {
                pending.entries.append(entry)
            }
            if pending.entries.count >= Self.entriesPerHandOver, !pending.promptFlush {
                pending.promptFlush = true
                return (true, true)
            }
            guard !pending.timedFlush, !handsOverAtEnd else { return (false, false) }
            pending.timedFlush = true
            return (true, false)
        }
        guard schedule else { return }
        if prompt {
            handOver.async { [self] in flush() }
        } else {
            handOver.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in
                pending.withLock { $0.timedFlush = false }
                flush()
            }
        }
    }

    private static func text(of entry: Entry, _ format: (RunEvent) -> String) -> String {
        switch entry {
        case .text(let text): text
        case .event(let event): format(event)
        }
    }

    /// Hands over what is gathered, formatted, on `handOver`'s queue.
    private func flush() {
        let entries = pending.withLock { pending -> [Entry] in
            pending.promptFlush = false
            let taken = pending.entries
            pending.entries = []
            return taken
        }
        guard !entries.isEmpty else { return }
        var text = ""
        for entry in entries {
            text += Self.text(of: entry, format)
            if text.utf8.count >= 32 * 1024 {
                console.write(text)
                text = ""
            }
        }
        if !text.isEmpty { console.write(text) }
    }

    /// The last flush of a run: everything handed over, in order; a writer
    /// of its own (not stdout's or stderr's, which `ConsoleWriter.settle`
    /// drains at exit) is drained here.
    func finish() {
        handOver.sync { flush() }
        if !console.isStandard { console.drain() }
    }
}
