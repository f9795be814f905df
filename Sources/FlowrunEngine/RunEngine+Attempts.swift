import Dispatch
import FlowrunModel
import FlowrunValues
import FlowrunEvents

/// Making the attempt that runs a task's action once: the one place where
/// a task's executor is picked (`executor:`, `http:`, `sleep:`).
extension RunEngine {
    func makeAttempt(for index: Int, completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        if let attemptFactory { return attemptFactory(self, index, completion) }
        switch nodes[index].definition!.value.action {
        case .sleep(let duration):
            return start(duration, on: SleepExecutor(queue: queue, soon: immediateWork), for: index, completion: completion)
        case .http(let request):
            do throws(TemplateRenderError) {
                var headers: [(String, String)] = []
                for header in request.headers { headers.append((header.name, try renderText(header.value, for: index))) }
                let rendered = HTTPExecutor.Request(
                    method: request.method, url: try renderText(request.url, for: index), headers: headers,
                    body: try request.body.map { (body: Template) throws(TemplateRenderError) -> String in try renderText(body, for: index) },
                    expect: request.expect, log: record.log(index: index, name: nodes[index].name, exists: nodes[index].hasLog),
                    secretMasker: secretMasker)
                let executor = HTTPExecutor(queue: queue, descriptorsFit: descriptorsFit, waitForDescriptors: descriptorWait)
                return start(rendered, on: executor, for: index, completion: completion)
            } catch {
                return FailedAttempt(reason: error.description, queue: queue, completion: completion)
            }
        case .run(let script):
            if runsOnSlurm(index) { return makeSlurmAttempt(for: index, script: script, completion: completion) }
            if let problem = probePortInUse(index) { return FailedAttempt(reason: problem, queue: queue, completion: completion) }
            return makeProcessAttempt(for: index, script: script, completion: completion)
        }
    }

    /// An attempt of `work` on `executor`, with an `AttemptOutput` when its attempts print.
    /// `logName`, `logPathForFiles`: as `makeOutput`'s.
    func start<E: Executor>(_ work: E.Work, on executor: E, for index: Int, logName: String? = nil, logPathForFiles: String? = nil,
                            completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        let output = executor.printsOutput ? makeOutput(for: index, logName: logName, logPathForFiles: logPathForFiles) : nil
        return executor.attempt(work, output: output, end: completion)
    }

    /// The sink of one attempt's output (see `AttemptOutput`): the task's
    /// log, its stash's capture (spilled whole beside the log past 1 MiB),
    /// `--stream` and a `line` probe, `::progress::` as `task_progress`.
    /// `logName`: the log is named so, not after the task (a service's
    /// `ready: {run: …}` probe writes beside its log; its lines are not streamed).
    /// `logPathForFiles`: `record.logPathForFiles` when the caller has it already (it makes the shard).
    func makeOutput(for index: Int, logName: String? = nil, logPathForFiles: String? = nil) -> AttemptOutput {
        let name = logName ?? nodes[index].name
        // The window is two bytes over the limit, so a value of exactly 1 MiB
        // keeps its `\r\n` and stays whole; any longer value is spilled whole.
        let capture = StdoutCapture(
            limit: ValueLimit.bytes + 2,
            spill: StdoutSpill.Location(log: logPathForFiles ?? record.logPathForFiles(index: index, name: name), attempt: nodes[index].attempt),
            spillAfter: ValueLimit.bytes)
        let engine = WeakEngine(engine: self)
        return AttemptOutput(
            log: record.log(index: index, name: name, exists: logName == nil && nodes[index].hasLog),
            capture: capture, masker: secretMasker, queue: queue,
            onLine: lineHandler(for: index, streaming: logName == nil ? nodes[index].name : nil),
            onProgress: { percent in engine.engine?.progressed(index, percent) })
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

    /// Nothing started: its failure is reported whatever the teardown.
    func cancel(as status: TaskStatus, reason: String, through steps: [TeardownStep]) {}
}
