import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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
/// When the descriptor is not a terminal (or `TERM=dumb`), there is no live
/// region and no escape code: the same lines above (finished tasks, join
/// blocks, the summary) are written as they come, at most ten times a
/// second, without colour.
public final class LiveTerminalReporter: RunReporter, @unchecked Sendable {
    // @unchecked: the timer is made in init, then only resumed once
    // (`started` guards it) and cancelled; everything else is a `let` of a
    // Sendable type.
    private enum Item: Sendable {
        case event(RunEvent)
        case output(task: String, line: String)
    }

    /// What reporters hand over, behind one lock: the engine's queue and
    /// the output thread append, the view's queue takes.
    private final class Mailbox: Sendable {
        let inbox = Mutex(Inbox())

        /// Everything that arrived since the last call, and the run's start.
        func take() -> ([Item], ContinuousClock.Instant?) {
            inbox.withLock { inbox in
                defer { inbox.items = [] }
                return (inbox.items, inbox.origin)
            }
        }
    }

    private struct Inbox {
        var items: [Item] = []
        /// The instant the run started, by this process's monotonic clock.
        var origin: ContinuousClock.Instant?
    }

    private let mailbox = Mailbox()
    private let queue = DispatchQueue(label: "flowrun.live-view")
    private let painter: Painter
    private let timer: any DispatchSourceTimer
    private let started = Atomic(false)

    /// Draws on `descriptor` (stdout unless told otherwise).
    public convenience init(descriptor: Int32 = 1) {
        self.init(descriptor: descriptor) { getenv($0).map { String(cString: $0) } }
    }

    /// `environment` reads `NO_COLOR` and `TERM`.
    init(descriptor: Int32, environment: (String) -> String?) {
        let isTerminal = isatty(descriptor) == 1 && environment("TERM") != "dumb"
        let style = TerminalStyle(usesColor: TerminalStyle.colorAllowed(descriptor: descriptor, environment: environment))
        painter = Painter(descriptor: descriptor, screen: LiveScreen(style: style, drawsRegion: isTerminal))
        timer = DispatchSource.makeTimerSource(queue: queue)
        if isTerminal { CursorGuard.register(descriptor) }
        let painter = painter
        let mailbox = mailbox
        timer.setEventHandler { painter.draw(mailbox) }
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100), leeway: .milliseconds(10))
    }

    /// Starts the timer once, when the run starts:
    /// not in `init`, which runs before the engine sets up its child reaper
    /// on the main thread (it wants that before any other thread exists).
    private func startDrawing() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        timer.resume()
    }

    public func report(_ event: RunEvent) {
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

    /// With `--stream`: the line goes above the region, `task | line`.
    public func output(task: String, line: String) {
        mailbox.inbox.withLock { $0.items.append(.output(task: task, line: line)) }
    }

    /// Draws the last frame (the summary), gives the cursor back, stops the timer.
    public func finish() {
        startDrawing()  // a suspended source must not be cancelled and released
        queue.sync {
            timer.cancel()
            painter.close(mailbox)
        }
    }

    /// Everything the view's queue owns.
    private final class Painter: @unchecked Sendable {
        // @unchecked: every method runs on the reporter's `queue`.
        let descriptor: Int32
        var state = LiveState()
        var screen: LiveScreen
        var lastRegion: [StyledLine] = []
        var lastColumns = 0
        var closed = false

        init(descriptor: Int32, screen: LiveScreen) {
            self.descriptor = descriptor
            self.screen = screen
        }

        /// Applies what arrived; draws when anything visible changed.
        func draw(_ mailbox: Mailbox) {
            guard !closed else { return }
            let (items, origin) = mailbox.take()
            let above = apply(items)
            guard screen.drawsRegion else {
                if !above.isEmpty { writeAll(descriptor, screen.frame(above: above, region: [], columns: 0)) }
                return
            }
            let size = TerminalSize.of(descriptor)
            let now = origin.map { $0.duration(to: ContinuousClock.now).seconds } ?? 0
            let region = LiveFrame.lines(state, now: now, columns: size.columns, rows: Self.regionRows(size.rows),
                                         tick: Int(now * 10))
            if above.isEmpty && region == lastRegion && size.columns == lastColumns { return }
            lastRegion = region
            lastColumns = size.columns
            writeAll(descriptor, screen.frame(above: above, region: region, columns: size.columns))
        }

        /// The last frame: whatever arrived (the summary among it), no region, the cursor back.
        func close(_ mailbox: Mailbox) {
            guard !closed else { return }
            closed = true
            let (items, _) = mailbox.take()
            let above = apply(items)
            writeAll(descriptor, screen.close(above: above, columns: TerminalSize.of(descriptor).columns))
            CursorGuard.released()
        }

        /// Ctrl-Z: leave the terminal as the shell expects it (the engine then stops flowrun).
        func suspend() {
            if !closed {
                writeAll(descriptor, screen.close(above: [], columns: TerminalSize.of(descriptor).columns))
                lastRegion = []
            }
        }

        /// Back from Ctrl-Z: the shell has written below; start a fresh region there.
        func resume() {
            screen.forgetRegion()
            lastRegion = []
        }

        private func apply(_ items: [Item]) -> [StyledLine] {
            var above: [StyledLine] = []
            for item in items {
                switch item {
                case .event(let event):
                    above += state.apply(event)
                case .output(let task, let line):
                    var styled = StyledLine(TerminalText.sanitized(task), .dim)
                    styled.append(" | ", .dim)
                    styled.append(TerminalText.sanitized(line))
                    above.append(styled)
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
            if descriptor >= 0 { writeAll(descriptor, LiveScreen.showCursor) }
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
    public func suspend() {
        queue.sync { painter.suspend() }
    }

    public func resume() {
        queue.async { [painter] in painter.resume() }
    }
}
