import Dispatch
import FlowrunModel
import FlowrunValues
import FlowrunEvents

/// Making the attempt that runs a task's action once.
extension RunEngine {
    func makeAttempt(for index: Int, completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        if let attemptFactory { return attemptFactory(self, index, completion) }
        switch nodes[index].definition!.value.action {
        case .sleep(let duration):
            return SleepAttempt(duration, queue: queue, soon: immediateWork, completion: completion)
        case .http(let request):
            do throws(TemplateRenderError) {
                var headers: [(String, String)] = []
                for header in request.headers { headers.append((header.name, try renderText(header.value, for: index))) }
                let url = try renderText(request.url, for: index)
                let body = try request.body.map { (body: Template) throws(TemplateRenderError) -> String in try renderText(body, for: index) }
                if let attempt = HTTPAttempt(
                    method: request.method, url: url, headers: headers, body: body,
                    expect: request.expect, log: record.log(index: index, name: nodes[index].name, exists: nodes[index].hasLog),
                    secretMasker: secretMasker,
                    queue: queue, descriptorsFit: descriptorsFit, waitForDescriptors: descriptorWait, completion: completion) {
                    return attempt
                }
                return FailedAttempt(reason: "not an http(s) URL: '\(URLRedaction.redact(url))'", queue: queue, completion: completion)
            } catch {
                return FailedAttempt(reason: error.description, queue: queue, completion: completion)
            }
        case .run(let script):
            if runsOnSlurm(index) { return makeSlurmAttempt(for: index, script: script, completion: completion) }
            if let problem = probePortInUse(index) { return FailedAttempt(reason: problem, queue: queue, completion: completion) }
            return makeProcessAttempt(for: index, script: script, completion: completion)
        }
    }
}

/// An attempt that fails before it starts anything (a bad URL, a template
/// that cannot be filled in): reports asynchronously like any other.
final class FailedAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: used only on the engine queue it was given (checked at `start`).
    private let result: AttemptResult
    private let queue: DispatchQueue
    private var completion: ((AttemptResult) -> Void)?

    init(reason: String, queue: DispatchQueue, completion: @escaping (AttemptResult) -> Void) {
        result = AttemptResult(status: .failed, reason: reason)
        self.queue = queue
        self.completion = completion
    }

    func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        queue.async { [self] in
            completion?(result)
            completion = nil
        }
    }

    func stop(as status: TaskStatus, reason: String) {}
    func kill() {}
}
