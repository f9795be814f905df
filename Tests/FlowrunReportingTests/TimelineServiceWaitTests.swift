@testable import FlowrunReporting
import Testing

/// A service that exited before it was ready and waits for its port's
/// closed connections (`task_waiting` after its `task_started`, then a
/// second `task_started` of the same attempt): the timeline draws both
/// tries and the wait between them, never dropping the first.
@Suite struct TimelineServiceWaitTests {
    @Test func aServiceWaitingForItsPortAfterItsFirstTryShowsBothTriesAndTheWait() throws {
        let why = "port 8080 still held by 1 closed connection (TIME_WAIT); starting again when it is gone"
        let lines = [
            #"{"event":"run_started","elapsed":0,"run_id":"r","workflow":"dev","path":"rec","max_parallel":4,"members":1}"#,
            #"{"event":"task_started","elapsed":0.1,"task":"web","attempt":1}"#,
            #"{"event":"task_waiting","elapsed":0.5,"task":"web","waiting_on":[""# + why + #""]}"#,
            #"{"event":"task_started","elapsed":60.5,"task":"web","attempt":1}"#,
            #"{"event":"task_ready","elapsed":61,"task":"web","after":60.9}"#,
            #"{"event":"task_finished","elapsed":70,"task":"web","attempt":1,"reason":"service stopped by flowrun"}"#,
        ]
        let timeline = try RunTimeline(eventsJSONL: Array((lines.joined(separator: "\n") + "\n").utf8))
        let tries = timeline.attempts.filter { $0.task == "web" }.sorted { $0.start < $1.start }
        #expect(tries.map(\.start) == [0.1, 60.5], "\(tries)")
        #expect(tries.first?.end == 0.5)
        let waits = timeline.waits.filter { $0.task == "web" }
        #expect(waits.count == 1 && waits.first?.start == 0.5 && waits.first?.end == 60.5 && waits.first?.waitingOn == [why], "\(waits)")
    }
}
