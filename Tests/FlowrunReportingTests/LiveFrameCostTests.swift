@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunReporting
import Foundation
import Testing

/// What the live view costs at scale, measured in CPU time (not wall time,
/// which a busy machine inflates): the engine's side (`report`) against the
/// plain reporter's, and the drawing side for a whole 20,000-task run.
@Suite struct LiveFrameCostTests {
    /// The events of `count` tasks that each start and succeed, 8 at a time.
    static func events(tasks count: Int) -> [RunEvent] {
        var events: [RunEvent] = []
        events.append(RunEvent(elapsed: 0, .runStarted(.init(
            runID: "20261122-140307-4f1c", workflow: "flat", path: "/dev/null", maxParallel: 8, members: count))))
        for index in 0..<count {
            let start = RunEvent(elapsed: Double(index) / 800, .taskStarted(.init(task: "t\(index)", attempt: 1)))
            let log = RunEvent.LogPath(path: "/tmp/run/logs/t\(index).log", offsetInRecord: "/tmp/run/".utf8.count)
            let finish = RunEvent(elapsed: Double(index) / 800 + 0.01, .taskFinished(.init(
                task: "t\(index)", status: .succeeded, attempt: 1, exitCode: 0, duration: 0.01, log: log)))
            events += [start, finish]
        }
        events.append(RunEvent(elapsed: Double(count) / 800, .runFinished(.init(
            runID: "20261122-140307-4f1c", duration: Double(count) / 800, counts: [(.succeeded, count)], exitCode: 0, path: "/dev/null"))))
        return events
    }

    /// CPU seconds this thread spent in `body`.
    static func threadCPU(_ body: () -> Void) -> Double {
        var before = timespec()
        var after = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &before)
        body()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &after)
        return Double(after.tv_sec - before.tv_sec) + Double(after.tv_nsec - before.tv_nsec) / 1e9
    }

    /// The engine's side of the live view only queues events (formatting and
    /// drawing happen on the view's own queue), so it stays a few µs per
    /// event even in a debug build. Plain lines used to be the yardstick; they
    /// became cheaper than queuing (built by appending), so the bound is now
    /// absolute and generous (about six times what queuing costs in a debug
    /// build here: 1.6 µs an event); the comparison with plain lines is printed.
    @Test func theEngineHandsEventsToTheLiveViewCheaply() throws {
        let events = Self.events(tasks: 20_000)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let plain = PlainReporter(descriptor: devNull)
        let live = LiveTerminalReporter(descriptor: devNull) { _ in nil }
        let plainCPU = Self.threadCPU { for event in events { plain.report(event) } }
        let liveCPU = Self.threadCPU { for event in events { live.report(event) } }
        plain.finish()
        live.finish()
        print("engine side, 40,002 events: plain \(Int(plainCPU * 1000)) ms, live view \(Int(liveCPU * 1000)) ms")
        #expect(liveCPU / Double(events.count) < 10e-6, "\(liveCPU * 1e6 / Double(events.count)) µs per event on the engine's side")
    }

    /// Everything the view's queue does for a 20,000-task run: apply every
    /// event, and draw 250 frames (25 s at ten a second) of the region plus
    /// the lines above it.
    @Test func drawingA20000TaskRunTakesLittleCPU() throws {
        let events = Self.events(tasks: 20_000)
        var state = LiveState()
        var screen = LiveScreen(style: TerminalStyle(usesColor: true), drawsRegion: true)
        var bytes = 0
        let frames = 250
        let perFrame = events.count / frames + 1
        let cpu = Self.threadCPU {
            for (index, batch) in stride(from: 0, to: events.count, by: perFrame).enumerated() {
                var above: [StyledLine] = []
                for event in events[batch..<min(batch + perFrame, events.count)] { above += state.apply(event) }
                let region = LiveFrame.lines(state, now: Double(index) / 10, columns: 80, rows: 16, tick: index)
                bytes += screen.frame(above: above, region: region, columns: 80).utf8.count
            }
        }
        print("view side, 20,000 tasks in \(frames) frames: \(Int(cpu * 1000)) ms CPU, \(bytes / 1024) KiB written")
        #expect(bytes > 20_000 * 10)
        // About 0.5 ms a frame in a debug build here; ten times that is still
        // 5 % of one core at ten frames a second. A frame that looks at every
        // task (quadratic in the run's size) would cost far more.
        #expect(cpu / Double(frames) < 5e-3, "\(cpu * 1000 / Double(frames)) ms of CPU per frame")
    }

    /// `--stream` lines handed to the live view (on the output thread) cost
    /// a few µs each, however many pile up before the next frame.
    @Test func handingStreamedLinesToTheLiveViewIsCheap() throws {
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let live = LiveTerminalReporter(descriptor: devNull) { _ in nil }
        let line = String(repeating: "x", count: 99)
        let tasks = 100
        let linesPerTask = 2_000
        let engineCPU = Self.threadCPU {
            for number in 0..<linesPerTask {
                for task in 0..<tasks { live.output(task: "t\(task)", line: number == 0 ? "first" : line, isError: false) }
            }
        }
        live.finish()
        print("streamed lines: \(tasks * linesPerTask) handed over in \(Int(engineCPU * 1000)) ms")
        #expect(engineCPU / Double(tasks * linesPerTask) < 20e-6, "\(engineCPU * 1e6 / Double(tasks * linesPerTask)) µs per line handed over")
    }
}
