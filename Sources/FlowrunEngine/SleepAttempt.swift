import Dispatch
import FlowrunModel
import FlowrunEvents

/// `sleep: 2s` or `sleep: 1s..3s`: a timer, no process (`SleepExecutor`).
final class SleepAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: used only on the engine queue it was given (checked at each entry).
    private let queue: DispatchQueue
    private let soon: ImmediateWork
    private let duration: Duration
    private let completion: (AttemptResult) -> Void
    private var timer: (any DispatchSourceTimer)?
    private var done = false

    init(_ sleep: SleepDuration, queue: DispatchQueue, soon: ImmediateWork, completion: @escaping (AttemptResult) -> Void) {
        self.queue = queue
        self.soon = soon
        self.completion = completion
        switch sleep {
        case .fixed(let duration):
            self.duration = duration
        case .range(let low, let high):
            let milliseconds = Int64.random(in: Int64(low.seconds * 1000)...Int64(high.seconds * 1000))
            duration = .milliseconds(milliseconds)
        }
    }

    func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        if duration <= .zero {
            // Never complete inside start(): the engine is still setting the attempt up.
            // Held strongly until then (a weak reference costs every attempt a side table).
            soon.add { [self] in complete(AttemptResult(status: .succeeded, exitCode: 0)) }
            return
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .nanoseconds(duration.nanoseconds))
        timer.setEventHandler { [weak self] in self?.complete(AttemptResult(status: .succeeded, exitCode: 0)) }
        self.timer = timer
        timer.resume()
    }

    /// Nothing to signal: any teardown ends it at once.
    func cancel(as status: TaskStatus, reason: String, through steps: [TeardownStep]) {
        complete(AttemptResult(status: status, reason: reason))
    }

    private func complete(_ result: AttemptResult) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !done else { return }
        done = true
        timer?.cancel()
        timer = nil
        completion(result)
    }
}
