#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunEvents

/// Retries (SPEC §8): which ends are retried, and the backoff before the next attempt.
extension Scheduler {
    /// Whether attempt `number` of `index`, ended `status`, is followed by
    /// another: it failed or timed out, has retries left, and the run is
    /// not stopping (nor its group timed out).
    func retries(_ index: Int, after number: Int, endedAs status: TaskStatus) -> Bool {
        guard status == .failed || status == .timedOut, let task = nodes[index].definition else { return false }
        return number <= task.value.retries && stopReason(for: index) == nil
    }

    /// The wait before attempt `number + 1`: `retry_delay × backoff^(number−1)`,
    /// never more than a day (SPEC §8) nor past the run's deadline, which
    /// falls due at its armed time (else `runStartedAt` + the timeout).
    func retryDelay(for index: Int, after number: Int, runStartedAt: Double) -> Duration {
        guard let task = nodes[index].definition?.value else { return .zero }
        var limit = NumericBounds.longestRetryDelay
        if let runTimeout {
            // Just past the deadline: the run stops then, and the retry with it.
            let deadline = deadlines.due[.run] ?? runStartedAt + runTimeout.seconds
            let left = Duration.milliseconds(Int64(max(0, (deadline - clock.now) * 1000).rounded()) + 1)
            limit = min(limit, left)
        }
        return Duration.product(task.retryDelay, pow(task.backoff, Double(number - 1)), atMost: limit)
    }

    /// A retry backs off holding no slot: waiting, not queued, until its
    /// `.retry` deadline (armed by whoever keeps the timers).
    mutating func backOff(_ index: Int) {
        checkQueue()
        nodes[index].status = .waiting
    }

    /// The retry's delay is over: true when it is still due (nothing
    /// settled it meanwhile) and goes back to `enqueue`.
    mutating func backOffEnded(_ index: Int) -> Bool {
        deadlines.disarm(.retry(index))
        guard nodes.contains(index), nodes[index].status == .waiting else { return false }
        nodes[index].status = .pending
        return true
    }
}
