@testable import FlowrunEvents
@testable import FlowrunEngine
import Foundation
import Testing

/// A service that exits before it is ready while its probe's port has
/// TIME_WAIT connections waits for them, then starts again as the same
/// attempt; past the limit it fails as it ended, saying so. The count of
/// connections is faked here (the real one: LocalListenersClosedConnectionsTests,
/// and end to end ServiceClosedConnectionsTests).
@Suite struct RunEngineClosedConnectionsTests {
    /// The faked count of TIME_WAIT connections, set by the test, read on the engine's queue.
    final class Count: @unchecked Sendable {
        // @unchecked: `value` is guarded by `lock`.
        private let lock = NSLock()
        private var current: Int
        init(_ value: Int) { current = value }
        var value: Int {
            get { lock.withLock { current } }
            set { lock.withLock { current = newValue } }
        }
    }

    static func service(giveUpAfter: Double, count: Count) throws -> EngineUnderTest {
        let run = try EngineUnderTest("""
            name: web
            tasks:
              web: {service: true, run: "true", ready: {tcp: "127.0.0.1:1", timeout: 60s}}
            """)
        run.engine.closedConnectionsOnPort = { _ in count.value }
        run.engine.closedConnectionsGiveUpAfter = giveUpAfter
        return run
    }

    static let exited = AttemptResult(status: .failed, exitCode: 1, reason: "exit 1")

    @Test func aServiceThatExitsBeforeReadyWhileItsPortIsHeldStartsAgainAsTheSameAttemptOnceItIsFree() throws {
        let count = Count(3)
        let run = try Self.service(giveUpAfter: 60, count: count)
        run.start()
        #expect(run.running(after: ["web"]) == ["web"])
        run.attempts.end("web", with: Self.exited)
        #expect(run.log.waitFor(.taskWaiting))
        run.settle()
        #expect(run.log.waiting("web").map(\.waitingOn) == [["port 1 still held by 3 closed connections (TIME_WAIT); starting again when they are gone"]])
        #expect(run.attempts.running.isEmpty && run.status("web") == .waiting)
        count.value = 0
        #expect(run.running(after: ["web"]) == ["web"])
        #expect(run.attempts.starts == ["web#1", "web#1"], "the same attempt, no retry spent")
        // A second early exit of the same attempt is an ordinary failure, whatever holds the port.
        count.value = 3
        run.attempts.end("web", with: Self.exited)
        #expect(run.exitCode() == 1)
        #expect(run.log.waiting("web").count == 1)
        #expect(run.log.retrying("web").isEmpty)
        #expect(run.log.finished("web").last?.reason == "the service exited before it was ready (exit 1)")
    }

    @Test func aServiceWhosePortStaysHeldPastTheLimitFailsSayingSo() throws {
        let run = try Self.service(giveUpAfter: 1, count: Count(2))
        run.start()
        #expect(run.running(after: ["web"]) == ["web"])
        run.attempts.end("web", with: Self.exited)
        #expect(run.exitCode() == 1)
        #expect(run.attempts.starts == ["web#1"])
        let reason = run.log.finished("web").last?.reason ?? ""
        #expect(reason == "the service exited before it was ready (exit 1); port 1 was still held by 2 closed connections (TIME_WAIT) after 1 s", "\(reason)")
    }

    @Test func aServiceThatExitsBeforeReadyWithNothingHoldingItsPortFailsAtOnce() throws {
        let run = try Self.service(giveUpAfter: 60, count: Count(0))
        run.start()
        #expect(run.running(after: ["web"]) == ["web"])
        run.attempts.end("web", with: Self.exited)
        #expect(run.exitCode() == 1)
        #expect(run.log.waiting("web").isEmpty)
        #expect(run.attempts.starts == ["web#1"])
    }
    /// Which last lines may be a failed bind (then the wait), and which give another reason (no wait).
    @Test func aBindFailureIsToldFromAnotherReasonByTheServicesLastLines() {
        let bind = [
            ["bind: Address already in use"],
            ["OSError: [Errno 98] Address already in use"],
            ["listen tcp 127.0.0.1:8080: bind: address already in use"],
            ["  code: 'EADDRINUSE',", "  errno: -98,", "}"],
            ["Web server failed to start. Port 8080 was already in use."],
            ["Error: Address in use (os error 98)"],
            ["java.net.BindException: Address already in use"] + Array(repeating: "\tat sun.nio.ch.Net.bind(Net.java:555)", count: 40),
            [], ["", "   "],
        ]
        for lines in bind { #expect(ClosedConnectionsWait.mayBeABindFailure(lines), "\(lines)") }
        let other = [
            ["config error - DATABASE_URL is not set"],
            ["  File \"server.py\", line 3", "    def handle(self)", "                    ^", "SyntaxError: expected ':'"],
            ["panic: runtime error: invalid memory address or nil pointer dereference"],
        ]
        for lines in other { #expect(!ClosedConnectionsWait.mayBeABindFailure(lines), "\(lines)") }
    }
}
