@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import FlowrunTestSupport
import Dispatch
import Foundation
import Testing

/// An attempt that starts no process: it ends when the test says so, or,
/// when the engine stops it (a timeout, a cancellation), at once with the
/// status the engine gave, as a real attempt would.
final class FakeAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: `completion` is touched on the engine's queue only.
    let task: String
    let number: Int
    private let queue: DispatchQueue
    private var completion: ((AttemptResult) -> Void)?
    private weak var owner: FakeAttempts?

    init(task: String, number: Int, queue: DispatchQueue, owner: FakeAttempts, completion: @escaping (AttemptResult) -> Void) {
        self.task = task
        self.number = number
        self.queue = queue
        self.owner = owner
        self.completion = completion
    }

    func start() { owner?.started(self) }

    /// Reports `result` on the engine's queue, once (later calls do nothing).
    func end(_ result: AttemptResult) {
        queue.async { [self] in
            completion?(result)
            completion = nil
        }
    }

    func cancel(as status: TaskStatus, reason: String, through steps: [TeardownStep]) {
        owner?.forget(self)
        end(AttemptResult(status: status, reason: reason))
    }
}

/// The attempts a `RunEngine` under test made: which run now, in which order
/// they started, and the commands that end them.
final class FakeAttempts: @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`.
    private let condition = NSCondition()
    private var live: [String: FakeAttempt] = [:]
    private var startLog: [String] = []

    /// What the engine calls instead of starting a process.
    func factory() -> RunEngine.AttemptFactory {
        { [self] engine, index, completion in
            FakeAttempt(task: engine.nodes[index].name, number: engine.nodes[index].attempt, queue: engine.queue, owner: self, completion: completion)
        }
    }

    func started(_ attempt: FakeAttempt) {
        condition.lock()
        precondition(live[attempt.task] == nil, "\(attempt.task) started while an attempt of it runs")
        live[attempt.task] = attempt
        startLog.append("\(attempt.task)#\(attempt.number)")
        condition.broadcast()
        condition.unlock()
    }

    func forget(_ attempt: FakeAttempt) {
        condition.lock()
        if live[attempt.task] === attempt { live[attempt.task] = nil }
        condition.unlock()
    }

    /// The tasks with an attempt running now.
    var running: Set<String> {
        condition.lock()
        defer { condition.unlock() }
        return Set(live.keys)
    }

    /// Every attempt started so far, as `task#attempt`, in order.
    var starts: [String] {
        condition.lock()
        defer { condition.unlock() }
        return startLog
    }

    /// Waits until every one of `tasks` runs (at most `seconds`); false if they did not.
    func waitUntilRunning(_ tasks: Set<String>, seconds: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !tasks.isSubset(of: Set(live.keys)) {
            guard condition.wait(until: deadline) else { return tasks.isSubset(of: Set(live.keys)) }
        }
        return true
    }

    /// Ends the running attempt of `task` with `status`.
    func end(_ task: String, _ status: TaskStatus = .succeeded, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        condition.lock()
        let attempt = live.removeValue(forKey: task)
        condition.unlock()
        guard let attempt else {
            Issue.record("\(task) is not running (running: \(running.sorted()))", sourceLocation: sourceLocation)
            return
        }
        let reason: String? = status == .succeeded ? nil : "fake \(status.rawValue)"
        attempt.end(AttemptResult(status: status, exitCode: status == .succeeded ? 0 : (status == .failed ? 1 : nil), reason: reason))
    }

    /// Ends the running attempt of `task` with `result` as it is.
    func end(_ task: String, with result: AttemptResult, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        condition.lock()
        let attempt = live.removeValue(forKey: task)
        condition.unlock()
        guard let attempt else {
            Issue.record("\(task) is not running (running: \(running.sorted()))", sourceLocation: sourceLocation)
            return
        }
        attempt.end(result)
    }
}

/// The events a run reported, in order.
final class EventLog: RunReporter, @unchecked Sendable {
    // @unchecked: guarded by `condition`.
    private let condition = NSCondition()
    private var list: [RunEvent] = []

    func report(_ event: RunEvent) {
        condition.lock()
        list.append(event)
        condition.broadcast()
        condition.unlock()
    }

    func finish() {}
    func output(task: String, line: String, isError: Bool) {}

    var events: [RunEvent] {
        condition.lock()
        defer { condition.unlock() }
        return list
    }

    func events(_ kind: RunEvent.Kind, _ subject: String? = nil) -> [RunEvent] {
        events.filter { $0.kind == kind && (subject == nil || $0.subject == subject) }
    }

    func waiting(_ task: String) -> [RunEvent.TaskWaiting] {
        events.compactMap { if case .taskWaiting(let event) = $0.payload, event.task == task { event } else { nil } }
    }

    func started(_ task: String) -> [RunEvent.TaskStarted] {
        events.compactMap { if case .taskStarted(let event) = $0.payload, event.task == task { event } else { nil } }
    }

    func retrying(_ task: String) -> [RunEvent.TaskRetrying] {
        events.compactMap { if case .taskRetrying(let event) = $0.payload, event.task == task { event } else { nil } }
    }

    func finished(_ task: String) -> [RunEvent.TaskFinished] {
        events.compactMap { if case .taskFinished(let event) = $0.payload, event.task == task { event } else { nil } }
    }

    func groupFinished(_ group: String) -> [RunEvent.GroupFinished] {
        events.compactMap { if case .groupFinished(let event) = $0.payload, event.group == group { event } else { nil } }
    }

    /// Waits until an event of `kind` was reported (at most `seconds`); false if none was.
    func waitFor(_ kind: RunEvent.Kind, seconds: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !list.contains(where: { $0.kind == kind }) {
            guard condition.wait(until: deadline) else { return list.contains { $0.kind == kind } }
        }
        return true
    }
}

/// A `RunEngine` on a workflow, with fake attempts and a run record in a
/// temporary folder, run on a thread of its own.
final class EngineUnderTest: @unchecked Sendable {
    // @unchecked: `outcome` is written by the run's thread before `finished` is signalled, read after.
    let engine: RunEngine
    let attempts = FakeAttempts()
    let log = EventLog()
    let directory: String
    private let finished = DispatchSemaphore(value: 0)
    private var outcome: RunOutcome?

    init(_ yaml: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        let plan = try Planner.plan(try workflow(yaml, sourceLocation: sourceLocation))
        directory = NSTemporaryDirectory() + "flowrun-engine-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let record = try RunRecord(baseDirectory: directory)
        engine = RunEngine(plan: plan, record: record, reporters: [log], attemptFactory: attempts.factory())
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func start() {
        let thread = Thread { [self] in
            outcome = engine.run()
            finished.signal()
        }
        thread.start()
    }

    /// Waits for every step queued on the engine so far (and what they
    /// started synchronously): the engine is then at rest until an attempt
    /// ends or a timer fires.
    func settle() { engine.queue.sync {} }

    /// The tasks running once the engine is at rest, after waiting for `expected` to start.
    func running(after expected: Set<String>, sourceLocation: Testing.SourceLocation = #_sourceLocation) -> Set<String> {
        #expect(attempts.waitUntilRunning(expected), "\(expected.sorted()) did not all start; running: \(attempts.running.sorted())",
                sourceLocation: sourceLocation)
        settle()
        return attempts.running
    }

    func status(_ name: String) -> TaskStatus? {
        engine.queue.sync { engine.indexByName[name].map { engine.nodes[$0].status } }
    }

    /// The run's exit code once it finished (nil if it did not within 10 s).
    func exitCode(sourceLocation: Testing.SourceLocation = #_sourceLocation) -> Int32? {
        guard finished.wait(timeout: .now() + 10) == .success else {
            Issue.record("the run did not finish; running: \(attempts.running.sorted())", sourceLocation: sourceLocation)
            return nil
        }
        finished.signal()  // a second call returns at once too
        return outcome?.exitCode
    }
}
