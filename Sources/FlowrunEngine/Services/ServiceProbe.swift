import Dispatch

/// One try of a readiness check. `poke` is called on the engine's queue each
/// interval; the check reports on that queue, at once or later (an HTTP
/// request in flight), nil when it passed, else what went wrong. A check
/// with a try in flight skips the poke: no try piles up behind another.
protocol ReadinessCheck: AnyObject {
    func poke(_ report: @escaping (String?) -> Void)
    /// Ends whatever try is in flight (the probe passed, timed out, or the service ended).
    func cancel()
}

/// A service's `ready:` probe in flight: its check tried every `interval`
/// on a timer of the engine's queue (no thread waits, nothing spins) until
/// it first passes or `timeout` has gone by.
final class ServiceProbe: @unchecked Sendable {
    // @unchecked: every member is touched only on `queue` (checked at each entry).
    private let queue: DispatchQueue
    private let check: any ReadinessCheck
    private let interval: Duration
    private let deadline: DispatchTime
    private let timeout: Duration
    private var timer: (any DispatchSourceTimer)?
    private var lastError: String?
    private var done = false
    private let onReady: () -> Void
    private let onTimeout: (String) -> Void

    init(check: any ReadinessCheck, interval: Duration, timeout: Duration, queue: DispatchQueue,
         onReady: @escaping () -> Void, onTimeout: @escaping (String) -> Void) {
        self.check = check
        self.interval = interval
        self.timeout = timeout
        self.queue = queue
        self.onReady = onReady
        self.onTimeout = onTimeout
        deadline = .now() + .nanoseconds(timeout.nanoseconds)
    }

    func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        // The first try at once: a service up in a millisecond is not kept waiting an interval.
        timer.schedule(deadline: .now(), repeating: .nanoseconds(max(1_000_000, interval.nanoseconds)))
        timer.setEventHandler { [weak self] in self?.tick() }
        self.timer = timer
        timer.resume()
    }

    /// Try again now (a `line` probe's match arrives between ticks).
    func tick() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !done else { return }
        if DispatchTime.now() >= deadline {
            finish()
            onTimeout("not ready after \(timeout.text): \(lastError ?? "the probe never answered")")
            return
        }
        check.poke { [weak self] problem in
            guard let self, !self.done else { return }
            dispatchPrecondition(condition: .onQueue(self.queue))
            if let problem {
                self.lastError = problem
            } else {
                self.finish()
                self.onReady()
            }
        }
    }

    /// Stops trying (the service ended, or the run is being stopped).
    func cancel() {
        dispatchPrecondition(condition: .onQueue(queue))
        finish()
    }

    private func finish() {
        guard !done else { return }
        done = true
        timer?.cancel()
        timer = nil
        check.cancel()
    }
}
