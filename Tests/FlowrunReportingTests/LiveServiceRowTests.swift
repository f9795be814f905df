@testable import FlowrunEvents
@testable import FlowrunReporting
import Testing

/// A service's row in the live view: `starting (probe …)` until its probe
/// passes, then `ready` (and a lasting `● NAME ready` line above); a watch
/// run says which file started it.
@Suite struct LiveServiceRowTests {
    private func apply(_ events: [RunEvent]) -> (LiveState, [String]) {
        var state = LiveState()
        var above: [String] = []
        for event in events { above += state.apply(event).map(\.description) }
        return (state, above)
    }

    private let start = RunEvent(elapsed: 0, .runStarted(.init(runID: "r", workflow: "dev", path: "rec", maxParallel: 4, members: 2)))

    @Test func aServiceRowSaysStartingWithItsProbeThenReady() {
        var started = RunEvent.TaskStarted(task: "db", attempt: 1)
        started.probe = "tcp 127.0.0.1:5433"
        let (starting, _) = apply([start, RunEvent(elapsed: 0.1, .taskStarted(started))])
        let row = LiveFrame.lines(starting, now: 1, columns: 100, rows: 20).map(\.description).joined(separator: "\n")
        #expect(row.contains("db") && row.contains("starting (probe tcp 127.0.0.1:5433)"), "\(row)")

        let (ready, above) = apply([start, RunEvent(elapsed: 0.1, .taskStarted(started)),
                                    RunEvent(elapsed: 0.7, .taskReady(.init(task: "db", after: 0.6, probe: "tcp 127.0.0.1:5433")))])
        let readyRow = LiveFrame.lines(ready, now: 1, columns: 100, rows: 20).map(\.description).joined(separator: "\n")
        #expect(readyRow.contains("  ready") && !readyRow.contains("starting"), "\(readyRow)")
        #expect(above == ["● db ready (0.6s, tcp 127.0.0.1:5433)"])
    }

    /// A service that exited before it was ready waits for its port's closed
    /// connections: its row leaves the running rows (it runs nothing) and waits, saying why.
    @Test func aServiceWaitingForItsPortsClosedConnectionsIsNoLongerARunningRow() {
        var started = RunEvent.TaskStarted(task: "web", attempt: 1)
        started.probe = "tcp 127.0.0.1:8080"
        let why = "port 8080 still held by 3 closed connections (TIME_WAIT); starting again when they are gone"
        let (state, _) = apply([start, RunEvent(elapsed: 0.1, .taskStarted(started)),
                                RunEvent(elapsed: 0.4, .taskWaiting(.init(task: "web", waitingOn: [why])))])
        let frame = LiveFrame.lines(state, now: 1, columns: 200, rows: 20).map(\.description).joined(separator: "\n")
        #expect(!frame.contains("starting (probe"), "\(frame)")
        #expect(frame.contains("TIME_WAIT"), "\(frame)")
    }

    @Test func aWatchRunSaysWhichFileStartedIt() {
        var run = RunEvent.RunStarted(runID: "r", workflow: "dev", path: "rec", maxParallel: 4, members: 1)
        run.trigger = "src/parse.c"
        let (_, above) = apply([RunEvent(elapsed: 0, .runStarted(run))])
        #expect(above == ["↺ after a change to src/parse.c"])
    }
}
