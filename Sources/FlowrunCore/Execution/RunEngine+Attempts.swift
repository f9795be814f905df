import Dispatch

/// Making the attempt that runs a task's action once.
extension RunEngine {
    func makeAttempt(for index: Int, completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        let task = nodes[index].task!
        switch task.action {
        case .sleep(let duration):
            return SleepAttempt(duration, queue: queue, completion: completion)
        case .http(let request):
            let headers = request.headers.map { ($0.name, renderText($0.value, for: index)) }
            let url = renderText(request.url, for: index)
            if let attempt = HTTPAttempt(
                method: request.method, url: url, headers: headers, body: request.body.map { renderText($0, for: index) },
                expect: request.expect, logPath: record.logPath(for: nodes[index].name), queue: queue, completion: completion) {
                return attempt
            }
            return FailedAttempt(reason: "not an http(s) URL: '\(url)'", queue: queue, completion: completion)
        case .run(let script):
            return makeProcessAttempt(for: index, script: script, completion: completion)
        }
    }
}

/// An attempt that fails before it starts anything (a bad URL, a template
/// that cannot be filled in): reports asynchronously like any other.
final class FailedAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: used only on the engine queue it was given.
    private let result: AttemptResult
    private let queue: DispatchQueue
    private var completion: ((AttemptResult) -> Void)?

    init(reason: String, queue: DispatchQueue, completion: @escaping (AttemptResult) -> Void) {
        result = AttemptResult(status: .failed, reason: reason)
        self.queue = queue
        self.completion = completion
    }

    func start() {
        queue.async { [self] in
            completion?(result)
            completion = nil
        }
    }

    func stop(as status: TaskStatus, reason: String) {}
    func kill() {}
}
