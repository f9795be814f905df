import Dispatch
import FlowrunEvents

/// A service that binds without SO_REUSEADDR (Python's `socketserver`
/// with `allow_reuse_address = False`, a plain C `bind`) cannot bind while
/// its port has connections its own side closed in TIME_WAIT: up to 60 s on
/// Linux after any client was served, and no sysctl shortens it. Waiting
/// them out before every start would cost those 60 s to servers that set
/// SO_REUSEADDR too, so a service starts at once; only when it then exits
/// before it is ready while its probe's port has such connections is it
/// started again, as the same attempt, once they are gone (SPEC §14). This
/// covers a restart under `watch` and a run right after another alike.
struct ClosedConnectionsWait {
    /// The attempt that waited: a second early exit of it is an ordinary failure.
    var attempt: Int
    var port: Int
    /// When the wait began (the run's clock), and the result it stands in for.
    var since: Double
    var result: AttemptResult
    /// The next look at /proc/net/tcp is after this (grows to `longestInterval`).
    var interval: Duration = .milliseconds(100)

    /// TIME_WAIT is 60 s on Linux; past this something else holds the port.
    static let giveUpAfter: Double = 75
    static let longestInterval: Duration = .milliseconds(500)

    /// Whether a service's last lines may be a failed bind: they say its address
    /// was in use (`Address already in use` from perror, Python, Go, Java, nginx,
    /// Redis, PostgreSQL; Node's `EADDRINUSE`; `Port 8080 was already in use`;
    /// errno 98 by number), or it said nothing at all. The last 60 lines: a
    /// Java stack trace puts its `BindException` line well above its end.
    static func mayBeABindFailure(_ lines: [String]) -> Bool {
        let said = lines.filter { !$0.allSatisfy(\.isWhitespace) }
        guard !said.isEmpty else { return true }
        return said.contains { line in
            let lower = line.lowercased()
            return lower.contains("already in use") || lower.contains("eaddrinuse") || lower.contains("address in use")
                || lower.contains("errno 98") || lower.contains("os error 98")
        }
    }
}

extension RunEngine {
    /// Attempt `number` of service `index` ended before it was ready
    /// (`result`, said as a service's): true when it waits for its port's
    /// closed connections and starts again, false when it ends as usual.
    func startsAgainOnceClosedConnectionsGo(_ index: Int, attempt number: Int, _ result: AttemptResult) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        // Only an exit of its own, not a stop by flowrun (a deadline, a cancel, the run stopping).
        guard result.reason?.hasPrefix("the service exited before it was ready") == true, stopping == nil,
              nodes[index].cancelReason == nil, let (_, port) = probeEndpoint(index) else { return false }
        // Once per attempt: its entry lives until the service settles (a retry is another attempt).
        if closedConnectionWaits[index]?.attempt == number { return false }
        let held = closedConnectionsOnPort(port)
        guard held > 0 else { return false }
        // Its own words first: one that said why it exited, and not that its address was in use
        // (a config error, a syntax error), failed for that reason; waiting out the port would hide it a minute.
        if result.wroteLog, !ClosedConnectionsWait.mayBeABindFailure(logTail(of: index, lines: 60)) { return false }
        closedConnectionWaits[index] = ClosedConnectionsWait(attempt: number, port: port, since: elapsed, result: result)
        scheduler.backOff(index)
        let why = "port \(port) still held by \(held) closed connection\(held == 1 ? "" : "s") (TIME_WAIT); starting again when \(held == 1 ? "it is" : "they are") gone"
        emit(event(.taskWaiting(.init(task: nodes[index].name, waitingOn: [why]))))
        lookAgainForClosedConnections(index)
        return true
    }

    /// The next look, on the queue's timer (the `.retry` one: a cancel or settle disarms it).
    private func lookAgainForClosedConnections(_ index: Int) {
        guard let wait = closedConnectionWaits[index] else { return }
        startTimer(.retry(index), after: wait.interval) { $0.closedConnectionsLooked(index) }
        closedConnectionWaits[index]?.interval = min(wait.interval * 2, ClosedConnectionsWait.longestInterval)
    }

    private func closedConnectionsLooked(_ index: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let wait = closedConnectionWaits[index], nodes.contains(index), nodes[index].status == .waiting else { return }
        let held = closedConnectionsOnPort(wait.port)
        if held == 0 {
            guard scheduler.backOffEnded(index) else { return }
            // The same attempt again: `markStarted` counts it once more, no retry is spent.
            nodes[index].attempt = wait.attempt - 1
            enqueue(index)
            return
        }
        // The task's own `timeout` (per attempt, and this is the same attempt) bounds the wait too.
        let taskTimeout = nodes[index].timeout
        let limit = min(closedConnectionsGiveUpAfter, taskTimeout?.seconds ?? .infinity)
        if elapsed - wait.since < limit {
            lookAgainForClosedConnections(index)
            return
        }
        closedConnectionWaits[index] = nil
        var result = wait.result
        if let taskTimeout, taskTimeout.seconds < closedConnectionsGiveUpAfter {
            result.status = .timedOut
            result.reason = (result.reason ?? "") + "; port \(wait.port) was still held by \(held) closed connections (TIME_WAIT) when its timeout (\(taskTimeout.text)) passed"
        } else {
            result.reason = (result.reason ?? "") + "; port \(wait.port) was still held by \(held) closed connections (TIME_WAIT) after \(Int(closedConnectionsGiveUpAfter.rounded())) s"
        }
        nodes[index].status = .running
        attemptEnded(index, attempt: wait.attempt, result)
        admitWaiters()
    }
}
