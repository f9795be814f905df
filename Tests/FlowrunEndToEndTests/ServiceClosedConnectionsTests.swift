import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// A server that binds without SO_REUSEADDR cannot bind while its port
    /// has connections its own side closed in TIME_WAIT (60 s on Linux, after
    /// any client it served; no sysctl shortens it), and "nothing listens"
    /// passed. Such a service that exits before it is ready is started again,
    /// as the same attempt, once those connections are gone, saying why
    /// (SPEC §14). The tests that wait take about a minute each: TIME_WAIT
    /// cannot be made shorter; they wait on the record, never a sleep.
    @Suite struct ServiceClosedConnectionsTests {
        /// A Python `socketserver` that answers `hello VERSION` and closes
        /// first (so TIME_WAIT is on its side), with SO_REUSEADDR or without.
        static func server(version: Int, reuseAddress: Bool) -> String {
            """
            import socketserver, sys
            class Hello(socketserver.StreamRequestHandler):
                def handle(self):
                    self.wfile.write(b"hello \(version)\\n")
            class Server(socketserver.TCPServer):
                allow_reuse_address = \(reuseAddress ? "True" : "False")
            Server(("127.0.0.1", int(sys.argv[1])), Hello).serve_forever()

            """
        }

        /// `web` (the server) and `client`, which reads its answer to the end and closes after it.
        static func workflow(port: Int) -> String {
            """
            tasks:
              web:
                service: true
                sources: [server.py]
                run: exec python3 server.py \(port)
                ready: { tcp: "127.0.0.1:\(port)", timeout: 20s }
              client:
                needs: [web]
                sources: [server.py]
                run: python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", \(port))); print(s.makefile().read().strip()); s.close()'
            """
        }

        /// Whether `count` runs have finished within `timeout`, looked at every
        /// 100 ms without holding a thread: the minute of TIME_WAIT would
        /// otherwise hold one of the test pool's threads (one per core) from every other test.
        static func runsFinished(_ sandbox: RunSandbox, _ count: Int, within timeout: Duration) async throws -> Bool {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                if RunEndToEnd.WatchTests.runs(sandbox).count >= count { return true }
                try await Task.sleep(for: .milliseconds(100))
            }
            return RunEndToEnd.WatchTests.runs(sandbox).count >= count
        }

        static func waitingLines(_ run: RunRecordFiles) -> [String] {
            run.events("task_waiting", task: "web").flatMap { $0["waiting_on"] as? [String] ?? [] }
        }

        /// Under watch: the edited server's restart finds the port held by the
        /// connections it closed; it is started again once they are gone,
        /// ready, without a retry spent. Fails on a binary without the wait
        /// (the restarted server exits "Address already in use").
        @Test func aServerWithoutReuseAddressRestartedUnderWatchComesBackOnceItsClosedConnectionsAreGone() async throws {
            _ = try RunSandbox.tool("python3")
            let sandbox = try RunSandbox()
            let port = try freePort()
            try RunEndToEnd.WatchTests.write(sandbox, "server.py", Self.server(version: 1, reuseAddress: false))
            let workflow = try sandbox.write(workflow: Self.workflow(port: port))
            let live = try LiveFlowrun(
                ["watch", workflow, "--log-dir", sandbox.logDirectory, "--output", "plain"],
                environment: sandbox.environment, directory: sandbox.path, hardTimeout: .seconds(240))
            #expect(RunEndToEnd.WatchTests.waitForRuns(sandbox, 1, timeout: .seconds(60)))
            let first = try #require(RunEndToEnd.WatchTests.runs(sandbox).first)
            #expect(first.stdout("client") == "hello 1", "\(first.statuses)")

            try RunEndToEnd.WatchTests.write(sandbox, "server.py", Self.server(version: 2, reuseAddress: false))
            // TIME_WAIT lasts 60 s: the run ends some 60 s later.
            #expect(try await Self.runsFinished(sandbox, 2, within: .seconds(150)))
            live.signalGroup(SIGINT)
            let ended = live.finish()
            let runs = RunEndToEnd.WatchTests.runs(sandbox)
            let second = try #require(runs.count >= 2 ? runs[1] : nil, "\(ended)")
            #expect(second.statuses["web"] == "succeeded" && second.statuses["client"] == "succeeded", "\(second.statuses)\n\(ended)")
            #expect(second.stdout("client") == "hello 2")
            let why = Self.waitingLines(second)
            #expect(why.count == 1 && why[0].hasPrefix("port \(port) still held by ") && why[0].hasSuffix("(TIME_WAIT); starting again when they are gone")
                        || why.first?.hasSuffix("(TIME_WAIT); starting again when it is gone") == true, "\(why)")
            // The same attempt: no retry spent, no `task_retrying`.
            #expect(second.events("task_started", task: "web").allSatisfy { ($0["attempt"] as? Int) == 1 }, "\(second.events("task_started", task: "web"))")
            #expect(second.events("task_retrying").isEmpty)
            #expect(ended.stdout.contains("waiting  web: port \(port) still held by "), "\(ended.stdout)")
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// A server that sets SO_REUSEADDR binds at once: no wait, no line.
        @Test func aServerWithReuseAddressRestartedUnderWatchIsReadyAtOnce() throws {
            _ = try RunSandbox.tool("python3")
            let sandbox = try RunSandbox()
            let port = try freePort()
            try RunEndToEnd.WatchTests.write(sandbox, "server.py", Self.server(version: 1, reuseAddress: true))
            let workflow = try sandbox.write(workflow: Self.workflow(port: port))
            let live = try LiveFlowrun(
                ["watch", workflow, "--log-dir", sandbox.logDirectory, "--output", "plain"],
                environment: sandbox.environment, directory: sandbox.path, hardTimeout: .seconds(120))
            #expect(RunEndToEnd.WatchTests.waitForRuns(sandbox, 1, timeout: .seconds(60)))
            try RunEndToEnd.WatchTests.write(sandbox, "server.py", Self.server(version: 2, reuseAddress: true))
            #expect(RunEndToEnd.WatchTests.waitForRuns(sandbox, 2, timeout: .seconds(60)))
            live.signalGroup(SIGINT)
            let ended = live.finish()
            let runs = RunEndToEnd.WatchTests.runs(sandbox)
            let second = try #require(runs.count >= 2 ? runs[1] : nil, "\(ended)")
            #expect(second.statuses["client"] == "succeeded" && second.stdout("client") == "hello 2", "\(second.statuses)\n\(ended)")
            #expect(Self.waitingLines(second).isEmpty, "\(Self.waitingLines(second))")
            // Ready well inside TIME_WAIT's 60 s (the machine is loaded: generous).
            let ready = try #require(second.events("task_ready", task: "web").first)
            #expect((ready["after"] as? Double ?? 99) < 20, "\(ready)")
            #expect(!ended.stdout.contains("TIME_WAIT"), "\(ended.stdout)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// Not only under watch: a second run right after the first finds the
        /// port held by the first run's closed connections, and waits them out.
        @Test func aSecondRunRightAfterTheFirstWaitsOutTheClosedConnections() async throws {
            let (sandbox, port) = try Self.afterAFirstRunLeavingClosedConnections()
            let live = try sandbox.start(Self.workflow(port: port), hardTimeout: .seconds(150))
            #expect(try await Self.runsFinished(sandbox, 2, within: .seconds(150)))
            let second = live.finish()
            #expect(second.exitStatus == 0, "\(second)")
            #expect(second.stdout.contains("waiting  web: port \(port) still held by "), "\(second.stdout)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// A sandbox whose first run of a server without SO_REUSEADDR (its
        /// handler closing first) left closed connections in TIME_WAIT on
        /// `port`: what the tests below start a service again into.
        static func afterAFirstRunLeavingClosedConnections() throws -> (sandbox: RunSandbox, port: Int) {
            _ = try RunSandbox.tool("python3")
            let sandbox = try RunSandbox()
            let port = try freePort()
            try RunEndToEnd.WatchTests.write(sandbox, "server.py", server(version: 1, reuseAddress: false))
            let first = try sandbox.run(workflow(port: port), timeout: .seconds(60))
            #expect(first.exitStatus == 0, "\(first)")
            #expect(closedConnections(on: port) > 0, "the first run left no closed connection on \(port): nothing tested")
            return (sandbox, port)
        }

        /// The TIME_WAIT entries whose local port is `port` (state 06 in /proc/net/tcp and tcp6).
        static func closedConnections(on port: Int) -> Int {
            var count = 0
            for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
                // Read to the end: a busy machine's table is larger than one read of a /proc file gives.
                guard let data = FileHandle(forReadingAtPath: file)?.readDataToEndOfFile() else { continue }
                let text = String(decoding: data, as: UTF8.self)
                for line in text.split(separator: "\n").dropFirst() {
                    let fields = line.split(separator: " ")
                    guard fields.count > 3, fields[3] == "06", let local = fields[1].split(separator: ":").last else { continue }
                    if Int(local, radix: 16) == port { count += 1 }
                }
            }
            return count
        }

        /// A service that exits before it is ready for a reason of its own (a
        /// config error it prints) while its port has closed connections in
        /// TIME_WAIT fails at once, with its own words. Before, it was taken
        /// for a server that could not bind: ~60 s of "port N still held by
        /// closed connections", its real error shown only after.
        @Test func aServiceThatSaysAnotherReasonIsNotKeptWaitingForItsPortsClosedConnections() throws {
            let (sandbox, port) = try Self.afterAFirstRunLeavingClosedConnections()
            let start = ContinuousClock.now
            let second = try sandbox.run("""
                tasks:
                  web:
                    service: true
                    run: python3 -c 'raise SystemExit("config error - DATABASE_URL is not set")'
                    ready: { tcp: "127.0.0.1:\(port)", timeout: 20s }
                  client: { needs: [web], run: echo client }
                """, timeout: .seconds(120))
            let took = ContinuousClock.now - start
            #expect(second.exitStatus == 1, "\(second)")
            #expect(took < .seconds(20), "took \(took): it waited out the port's closed connections")
            #expect(!second.stdout.contains("TIME_WAIT"), "\(second.stdout)")
            #expect(second.stdout.contains("FAILED   web") && second.stdout.contains("config error - DATABASE_URL is not set"), "\(second.stdout)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// While a service waits out its port's closed connections nothing of
        /// it runs: `flowrun show` says `waiting` and why, not `running`.
        @Test func showSaysAServiceWaitingOutItsPortsClosedConnectionsIsWaiting() throws {
            let (sandbox, port) = try Self.afterAFirstRunLeavingClosedConnections()
            let live = try sandbox.start(Self.workflow(port: port), hardTimeout: .seconds(150))
            var shown = ""
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                shown = (try? FlowrunBinary.run(["show", "--log-dir", sandbox.logDirectory], in: sandbox.path, environment: sandbox.environment).stdout) ?? ""
                if shown.contains("still held by") { break }
                usleep(100_000)
            }
            live.signalGroup(SIGINT)
            let ended = live.finish()
            #expect(ended.stdout.contains("waiting  web: port \(port) still held by "), "\(ended.stdout)")
            let row = shown.split(separator: "\n").first { $0.contains(" web ") }.map(String.init) ?? ""
            #expect(row.contains("waiting") && row.contains("port \(port) still held by") && !row.contains("running"), "\(shown)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
        /// The wait is part of the same attempt: the task's own `timeout`
        /// (per attempt) bounds it. Before, a service with `timeout: 3s`
        /// waited its port's closed connections out for a minute.
        @Test func aServicesOwnTimeoutBoundsTheWaitForItsPortsClosedConnections() throws {
            let (sandbox, port) = try Self.afterAFirstRunLeavingClosedConnections()
            let start = ContinuousClock.now
            let second = try sandbox.run(Self.workflow(port: port).replacingOccurrences(of: "    service: true\n", with: "    service: true\n    timeout: 3s\n"), timeout: .seconds(120))
            let took = ContinuousClock.now - start
            #expect(second.exitStatus == 1, "\(second)")
            #expect(took < .seconds(20), "took \(took): the wait outlived the service's 3 s timeout")
            #expect(second.stdout.contains("waiting  web: port \(port) still held by "), "\(second.stdout)")
            let record = try #require(RunEndToEnd.WatchTests.runs(sandbox).last)
            #expect(record.statuses["web"] == "timed_out", "\(record.statuses)")
            let reason = record.finished("web")?["reason"] as? String ?? ""
            #expect(reason.contains("closed connections (TIME_WAIT) when its timeout (3s) passed"), "\(reason)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}
