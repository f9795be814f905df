import Foundation
import Testing

extension RunEndToEnd {
    /// The tests of what a task runs with that time it (how long a `sleep`
    /// or an `http` task's timeout took): one at a time, so that their
    /// tolerances measure flowrun. The rest are
    /// `RunEndToEndParallel.RunTaskEnvironmentTests`.
    @Suite struct RunTaskTimingTests {
        /// A `sleep` task waits without starting any process: flowrun has no
        /// child but its sentinel while it sleeps.
        @Test func sleepTasksStartNoProcess() throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                tasks:
                  nap: {sleep: 1s}
                  ranged: {sleep: 300ms..600ms}
                """)
            try #require(sandbox.waitForEvent("task_started"), "nothing started")
            // The pid the shell knows is the supervisor; its one child, the engine, starts tasks.
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            var samples = 0
            var children: [Int32] = []
            // Look at the engine's children repeatedly while the naps run.
            _ = poll(until: .milliseconds(600), every: .milliseconds(20)) {
                samples += 1
                // The engine's sentinel (a child of its flowrun-link thread, whose
                // name it keeps; docs/RUNNING.md "Processes") is not a task.
                children += ProcessProbe.children(of: engine).filter { ProcessProbe.text("/proc/\($0)/comm") != "flowrun-link\n" }
                return false
            }
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 0, "\(ended)")
            #expect(samples >= 10)
            #expect(children.isEmpty, "flowrun had children while only sleep tasks ran: \(children)")
            let record = try sandbox.record()
            let nap = try #require(double(record.finished("nap")?["duration"]))
            let ranged = try #require(double(record.finished("ranged")?["duration"]))
            #expect(nap >= 0.99 && nap < 1.3, "sleep 1s took \(nap) s")
            #expect(ranged >= 0.299 && ranged < 0.9, "sleep 300ms..600ms took \(ranged) s")
            #expect(record.statuses == ["nap": "succeeded", "ranged": "succeeded"])
        }

        /// A server that accepts the connection and never answers: the
        /// task's `timeout` stops the request.
        @Test func anHTTPTaskTimesOut() throws {
            let sandbox = try RunSandbox()
            let silent = try TCPListener()
            let run = try sandbox.run("""
                tasks:
                  hang: {http: {url: "http://127.0.0.1:\(silent.port)/"}, timeout: 500ms}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            #expect(run.wallSeconds < 3, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("hang") == "timed_out", "\(record.overview)")
            let duration = try #require(double(record.finished("hang")?["duration"]))
            #expect(duration >= 0.49 && duration < 1.5, "\(duration)")
        }
    }
}
