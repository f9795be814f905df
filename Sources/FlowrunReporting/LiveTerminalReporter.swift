import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues
package import FlowrunEvents
import FlowrunRecord

/// `--output tty`: the live view. Finished tasks, retries, groups and join
/// blocks are printed once, above a live region that is redrawn in place:
/// the running tasks with a progress bar, elapsed time and attempt, and
/// what waiting tasks wait on. A summary replaces the region at the end.
///
/// Cheap for the engine: `report` (on the engine's serial queue) only
/// appends the event to an inbox. A timer on the view's own serial queue
/// takes the inbox at most ten times a second, applies the events to a
/// `LiveState`, builds the frame (`LiveFrame`) and writes it with one
/// `write()` (`LiveScreen`). However many events arrive, there are at most
/// ten frames a second.
///
/// The width is asked of the terminal every frame (`TIOCGWINSZ`, one system
/// call), so a resized window is drawn at its new width from the next frame
/// on; no SIGWINCH handler is needed.
///
/// Bounded whatever tasks print: with `--stream`, the inbox keeps only each
/// task's most recent lines between two frames (`RecentLines`) and says how
/// many it left out; frames go through a `ConsoleWriter`, and while the
/// terminal is behind the view holds its lines back (a bounded number)
/// rather than cut a frame in half.
///
/// When the descriptor is not a terminal (or `TERM=dumb`), there is no live
/// region and no escape code: the same lines above (finished tasks, join
/// blocks, the summary) are written as they come, at most ten times a
/// second, without colour.
package final class LiveTerminalReporter: RunReporter, @unchecked Sendable {
    // @unchecked: the timer and the resize source are made in init, then
    // only resumed once (`started` guards it) and cancelled; everything else
    // is a `let` of a Sendable type.
    private enum Item: Sendable {
        case event(RunEvent)
        /// Where the task's lines (in `Inbox.outputs`) go among the events:
        /// at its first line since the last frame.
        case output(task: String)
    }

    /// What reporters hand over, behind one lock: the engine's queue and
    /// the output thread append, the view's queue takes.
    private final class Mailbox: Sendable {
        let inbox = Mutex(Inbox())

        /// Everything that arrived since the last call, and the run's start.
        func take() -> Taken {
            inbox.withLock { inbox in
                defer {
                    inbox.items = []
                    inbox.outputs = [:]
                    inbox.outputBytes = 0
                }
                return Taken(items: inbox.items, outputs: inbox.outputs, origin: inbox.origin)
            }
        }

        /// A line a task printed: kept among its recent lines, or counted as left out.
        func add(task: String, line: String) {
            let line = RecentLines.cut(line)
            inbox.withLock { inbox in
                if inbox.outputs[task] == nil { inbox.items.append(.output(task: task)) }
                if inbox.outputBytes + line.utf8.count > Inbox.outputByteLimit {
                    inbox.outputs[task, default: RecentLines()].skip()
                } else {
                    inbox.outputBytes += inbox.outputs[task, default: RecentLines()].append(line)
                }
            }
        }
    }

    private struct Taken {
        var items: [Item]
        var outputs: [String: RecentLines]
        var origin: ContinuousClock.Instant?
    }

    private struct Inbox {
        /// Bytes of task output the inbox holds at most between two frames.
        static let outputByteLimit = 1 << 20

        var items: [Item] = []
        var outputs: [String: RecentLines] = [:]
        var outputBytes = 0
        /// The instant the run started, by this process's monotonic clock.
        var origin: ContinuousClock.Instant?
    }

    private let mailbox = Mailbox()
    private let queue = DispatchQueue(label: "flowrun.live-view")
    private let painter: Painter
    private let timer: any DispatchSourceTimer
    /// SIGWINCH on a terminal: the region is drawn again at its new width.
    private let resizeSource: (any DispatchSourceSignal)?
    private let started = Atomic(false)

    /// Draws on `descriptor` (stdout unless told otherwise); with `streams`
    /// (`--stream`), every line tasks print goes above the region.
    package convenience init(descriptor: Int32 = 1, streams: Bool = false) {
        self.init(descriptor: descriptor, streams: streams) { getenv($0).map { String(cString: $0) } }
    }

    /// Whether the view draws a live region (a terminal, not `TERM=dumb`):
    /// then each running task's row shows its latest line of output.
    package let drawsRegion: Bool

    /// `environment` reads `NO_COLOR` and `TERM`.
    init(descriptor: Int32, streams: Bool = false, environment: (String) -> String?) {
        let isTerminal = isatty(descriptor) == 1 && environment("TERM") != "dumb"
        drawsRegion = isTerminal
        let style = TerminalStyle(usesColor: TerminalStyle.colorAllowed(descriptor: descriptor, environment: environment))
        painter = Painter(descriptor: descriptor, console: ConsoleWriter.shared(for: descriptor),
                          screen: LiveScreen(style: style, drawsRegion: isTerminal), streams: streams)
        timer = DispatchSource.makeTimerSource(queue: queue)
        var resize: (any DispatchSourceSignal)?
        if isTerminal {
            CursorGuard.register(descriptor)
            // A resize redraws at once, not at the next tick. (Ctrl-Z is the
            // engine's: it suspends reporters through `SuspendableReporter`.)
            resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: queue)
        }
        resizeSource = resize
        let painter = painter
        let mailbox = mailbox
        timer.setEventHandler { painter.draw(mailbox) }
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100), leeway: .milliseconds(10))
        resize?.setEventHandler { painter.draw(mailbox) }
    }

    /// Starts the timer and the resize source once, when the run starts:
    /// not in `init`, which runs before the engine sets up its child reaper
    /// on the main thread (it wants that before any other thread exists).
    private func startDrawing() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        timer.resume()
        resizeSource?.resume()
    }

    package func report(_ event: RunEvent) {
        if event.kind == .runStarted {
            startDrawing()
            let origin = ContinuousClock.now - .milliseconds(Int64(event.elapsed * 1000))
            mailbox.inbox.withLock {
                $0.origin = origin
                $0.items.append(.event(event))
            }
        } else {
            mailbox.inbox.withLock { $0.items.append(.event(event)) }
        }
    }

    /// A line a task printed. With `--stream` it goes above the region,
    /// `task | line` (`task ! line` for stderr); on a terminal it is also
    /// the task's row's latest line. Only each task's recent lines are kept
    /// between two frames (`RecentLines`): memory stays flat whatever it prints.
    package func output(task: String, line: String, isError: Bool) {
        mailbox.add(task: task, line: (isError ? "! " : "| ") + line)
    }

    /// Draws the last frame (the summary), gives the cursor back, stops the timer.
    package func finish() {
        startDrawing()  // a suspended source must not be cancelled and released
        queue.sync {
            timer.cancel()
            resizeSource?.cancel()
            painter.close(mailbox)
        }
        if !painter.console.isStandard { painter.console.drain() }
    }

    /// Everything the view's queue owns.
    private final class Painter: @unchecked Sendable {
        // @unchecked: every method runs on the reporter's `queue`.
        /// Lines held back while the terminal is behind, at most this many (the oldest go).
        static let heldLimit = 2000

        let descriptor: Int32
        let console: ConsoleWriter
        var state = LiveState()
        var screen: LiveScreen
        var lastRegion: [StyledLine] = []
        var lastColumns = 0
        var closed = false
        let streams: Bool
        /// Lines for above the region not yet handed to the console.
        var held: [StyledLine] = []

        init(descriptor: Int32, console: ConsoleWriter, screen: LiveScreen, streams: Bool) {
            self.descriptor = descriptor
            self.console = console
            self.screen = screen
            self.streams = streams
        }

        /// Applies what arrived; draws when anything visible changed.
        func draw(_ mailbox: Mailbox) {
            guard !closed else { return }
            let taken = mailbox.take()
            let origin = taken.origin
            let size = screen.drawsRegion ? TerminalSize.of(descriptor) : TerminalSize(columns: 80, rows: 24)
            state.columns = size.columns
            var above = held + apply(taken)
            held = []
            if console.backlog > console.capacity / 4 {
                // The terminal is behind: draw later rather than drop half a frame.
                if above.count > Self.heldLimit {
                    console.countDropped(lines: above.count - Self.heldLimit)
                    above.removeFirst(above.count - Self.heldLimit)
                }
                held = above
                return
            }
            guard screen.drawsRegion else {
                if !above.isEmpty { console.write(screen.frame(above: above, region: [], columns: 0), countingAs: above.count) }
                return
            }
            let now = origin.map { $0.duration(to: ContinuousClock.now).seconds } ?? 0
            let region = LiveFrame.lines(state, now: now, columns: size.columns, rows: Self.regionRows(size.rows),
                                         tick: Int(now * 10))
            if above.isEmpty && region == lastRegion && size.columns == lastColumns { return }
            lastRegion = region
            lastColumns = size.columns
            if !console.write(screen.frame(above: above, region: region, columns: size.columns), countingAs: above.count) {
                // Not drawn: whatever the screen shows, the next frame starts below it.
                screen.forgetRegion()
                lastRegion = []
            }
        }

        /// The last frame: whatever arrived (the summary among it), no region, the cursor back.
        func close(_ mailbox: Mailbox) {
            guard !closed else { return }
            closed = true
            let columns = screen.drawsRegion ? TerminalSize.of(descriptor).columns : 80
            state.columns = columns
            let above = held + apply(mailbox.take())
            held = []
            if console.write(screen.close(above: above, columns: columns), countingAs: above.count) {
                CursorGuard.released()
            }
        }

        /// Ctrl-Z: leave the terminal as the shell expects it (the engine then stops flowrun).
        func suspend() {
            if !closed {
                console.write(screen.close(above: [], columns: TerminalSize.of(descriptor).columns))
                lastRegion = []
                // The shell takes the terminal next: let the bytes reach it first (bounded).
                console.waitUntilWritten(limit: .seconds(1))
            }
        }

        /// Back from Ctrl-Z: the shell has written below; start a fresh region there.
        func resume() {
            screen.forgetRegion()
            lastRegion = []
        }

        private func apply(_ taken: Taken) -> [StyledLine] {
            var above: [StyledLine] = []
            for item in taken.items {
                switch item {
                case .event(let event):
                    above += state.apply(event)
                case .output(let task):
                    guard let recent = taken.outputs[task] else { continue }
                    let name = TerminalText.escapedName(task)
                    // Each kept line starts with its stream's mark, `| ` or `! `.
                    if let latest = recent.lines.last {
                        state.noteOutput(task: name, line: String(latest.dropFirst(2)))
                    }
                    guard streams else { continue }
                    if recent.skipped > 0 {
                        var styled = StyledLine(name, .dim)
                        styled.append(" | … \(recent.skipped) line\(recent.skipped == 1 ? "" : "s") not shown (all in the log)", .dim)
                        above.append(styled)
                    }
                    for line in recent.lines {
                        let isError = line.hasPrefix("! ")
                        var styled = StyledLine(name, .dim)
                        styled.append(isError ? " ! " : " | ", isError ? .warning : .dim)
                        styled.append(TerminalText.sanitized(String(line.dropFirst(2))))
                        above.append(styled)
                    }
                }
            }
            return above + state.collapsedLines()
        }

        /// The region takes up to two thirds of the window, never all of it
        /// (the cursor must be able to get back to its first row).
        static func regionRows(_ rows: Int) -> Int {
            max(3, min(rows - 1, rows * 2 / 3 + 1))
        }
    }
}

/// The terminal's size, asked with `TIOCGWINSZ`; 80×24 when it cannot tell.
struct TerminalSize: Equatable {
    var columns: Int
    var rows: Int

    static func of(_ descriptor: Int32) -> TerminalSize {
        var size = winsize()
        guard ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else {
            return TerminalSize(columns: 80, rows: 24)
        }
        return TerminalSize(columns: Int(size.ws_col), rows: max(1, Int(size.ws_row)))
    }
}

/// Gives the cursor back if flowrun exits while the live view has it
/// hidden (a path that never reached `finish`). Signals that stop a run
/// (SIGINT, SIGTERM, SIGHUP) go through the engine, which ends the run and
/// calls `finish`, so this is the last resort, not the usual way.
enum CursorGuard {
    /// The descriptor whose cursor is hidden, or -1.
    private static let hiddenOn = Atomic<Int32>(-1)
    private static let installed: Void = {
        atexit {
            let descriptor = CursorGuard.hiddenOn.exchange(-1, ordering: .relaxed)
            // Not on a console that failed or was given up on: this write would block.
            if descriptor >= 0, ConsoleWriter.shared(for: descriptor).failure == nil {
                _ = writeAll(descriptor, LiveScreen.showCursor)  // at exit: nothing left to tell
            }
        }
    }()

    static func register(_ descriptor: Int32) {
        _ = installed
        hiddenOn.store(descriptor, ordering: .relaxed)
    }

    static func released() {
        hiddenOn.store(-1, ordering: .relaxed)
    }
}

/// Ctrl-Z: the engine stops the run (see RunEngine+Suspension.swift); the
/// view gives the cursor back first and draws afresh after `fg`.
extension LiveTerminalReporter: SuspendableReporter {
    package func suspend() {
        queue.sync { painter.suspend() }
    }

    package func resume() {
        queue.async { [painter] in painter.resume() }
    }
}
