@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import FlowrunTestSupport
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing

/// The `Executor` seam (issue 33): an executor with no process behind it
/// reports output chunks to the engine's `AttemptOutput` and its end once;
/// the engine makes stash and progress of the chunks, and hands every
/// cancel to the executor as teardown steps, in order.
@Suite struct ExecutorTests {
    @Test func aFakeExecutorsChunksBecomeTheStashTheLogAndProgress() throws {
        let run = try FakeExecutorRun("""
            tasks:
              produce: {run: fake}
            """)
        run.start()
        let attempt = try #require(run.executor.attempt("produce"))
        // Split anywhere, as a pipe or a poll would split them.
        attempt.print("::progress::4", .stdout)
        attempt.print("0\nhel", .stdout)
        attempt.print("warning\n", .stderr)
        attempt.print("lo\n", .stdout)
        // Failed, so that task_finished carries the log's tail.
        attempt.finish(AttemptResult(status: .failed, exitCode: 1, reason: "exit 1"))
        #expect(run.exitCode() == 1)

        #expect(run.log.events(.taskProgress, "produce").compactMap { event -> Int? in
            if case .taskProgress(let progress) = event.payload { progress.percent } else { nil }
        } == [40])
        #expect(run.engine.queue.sync { run.engine.nodes[run.engine.indexByName["produce"]!].stash.stdout } == "hello")
        let finished = try #require(run.log.finished("produce").first)
        #expect(finished.status == .failed)
        #expect(finished.log != nil, "the chunks made a log")
        // In arrival order, as written: progress lines are left out of the stash, not the log.
        #expect(finished.logTail == ["::progress::40", "helwarning", "lo"])
    }

    @Test func aTimeoutIsHandedToTheExecutorAsTermThenKillAfterTheGrace() throws {
        let run = try FakeExecutorRun("""
            kill_grace: 3s
            tasks:
              slow: {run: fake, timeout: 100ms}
            """)
        run.start()
        let attempt = try #require(run.executor.attempt("slow"))
        #expect(attempt.waitForCancels(1))
        attempt.finish(AttemptResult(status: .failed, exitCode: 143, signal: Int(SIGTERM)))
        #expect(run.exitCode() == 1)
        #expect(attempt.cancels == [
            FakeExecutorAttempt.Cancel(status: .timedOut, reason: "timed out after 100ms", steps: [.signal(SIGTERM, grace: .seconds(3)), .kill]),
        ])
        #expect(run.log.finished("slow").first?.status == .timedOut)
    }

    @Test func aSecondSignalFollowsTheGracefulStopWithKillAlone() throws {
        let run = try FakeExecutorRun("""
            kill_grace: 5s
            tasks:
              long: {run: fake}
            """)
        run.start()
        let attempt = try #require(run.executor.attempt("long"))
        run.engine.queue.sync { run.engine.stop(because: .signal) }
        #expect(attempt.waitForCancels(1))
        run.engine.queue.sync { run.engine.killEverything() }
        #expect(attempt.waitForCancels(2))
        attempt.finish(AttemptResult(status: .failed, exitCode: 137, signal: Int(SIGKILL)))
        #expect(run.exitCode() != nil)
        #expect(attempt.cancels.map(\.steps) == [[.signal(SIGTERM, grace: .seconds(5)), .kill], [.kill]])
        // The first cancel's status and reason are the attempt's.
        #expect(attempt.cancels.first?.status == .cancelled)
        #expect(run.log.finished("long").first?.status == .cancelled)
    }

    @Test func theOutputSinkKeepsWholeLinesWhenTwoThreadsWriteAtOnce() {
        // The sink is Sendable through its Mutex, not by a comment: a local
        // attempt writes it on the loop's thread while Slurm polls on the queue.
        let directory = NSTemporaryDirectory() + "flowrun-sink-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let record = try? RunRecord(baseDirectory: directory) else {
            Issue.record("cannot make a run record in \(directory)")
            return
        }
        let output = AttemptOutput(
            log: record.log(index: 0, name: "t", exists: false), capture: StdoutCapture(), masker: nil,
            queue: DispatchQueue(label: "test.engine"), onLine: nil, onProgress: { _ in })
        DispatchQueue.concurrentPerform(iterations: 2) { writer in
            let line = Array((writer == 0 ? "aaaaaaaa\n" : "bbbbbbbb\n").utf8)
            for _ in 0..<2_000 { line.withUnsafeBytes { output.write($0, .stdout) } }
        }
        output.end(.stdout)
        let lines = output.close().stdout.split(separator: "\n")
        #expect(lines.count == 4_000)
        #expect(lines.allSatisfy { $0 == "aaaaaaaa" || $0 == "bbbbbbbb" })
    }
}

/// An executor that starts nothing: each attempt waits for the test to
/// print through it and end it, and records the cancels the engine asks for.
final class FakeExecutor: Executor, Sendable {
    private let started = Mutex<[String: FakeExecutorAttempt]>([:])
    private let condition = NSCondition()

    var printsOutput: Bool { true }

    func attempt(_ task: String, output: AttemptOutput?, end: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        FakeExecutorAttempt(task: task, output: output!, end: end) { [self] attempt in
            condition.lock()
            started.withLock { $0[attempt.task] = attempt }
            condition.broadcast()
            condition.unlock()
        }
    }

    /// The attempt of `task` once it started (nil if it did not within 10 s).
    func attempt(_ task: String) -> FakeExecutorAttempt? {
        let deadline = Date(timeIntervalSinceNow: 10)
        condition.lock()
        defer { condition.unlock() }
        while started.withLock({ $0[task] }) == nil {
            guard condition.wait(until: deadline) else { break }
        }
        return started.withLock { $0[task] }
    }
}

final class FakeExecutorAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: `end` is called once, on the engine's queue (`finish` hops
    // there); `cancelLog` is behind `condition`; `output` is Sendable.
    struct Cancel: Equatable {
        var status: TaskStatus
        var reason: String
        var steps: [TeardownStep]
    }

    let task: String
    private let output: AttemptOutput
    private let end: (AttemptResult) -> Void
    private let onStart: (FakeExecutorAttempt) -> Void
    private let condition = NSCondition()
    private var cancelLog: [Cancel] = []
    private var queue: DispatchQueue?

    init(task: String, output: AttemptOutput, end: @escaping (AttemptResult) -> Void, onStart: @escaping (FakeExecutorAttempt) -> Void) {
        self.task = task
        self.output = output
        self.end = end
        self.onStart = onStart
    }

    func start() { onStart(self) }

    func cancel(as status: TaskStatus, reason: String, through steps: [TeardownStep]) {
        condition.lock()
        cancelLog.append(Cancel(status: status, reason: reason, steps: steps))
        condition.broadcast()
        condition.unlock()
    }

    var cancels: [Cancel] {
        condition.lock()
        defer { condition.unlock() }
        return cancelLog
    }

    func waitForCancels(_ count: Int) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        condition.lock()
        defer { condition.unlock() }
        while cancelLog.count < count {
            guard condition.wait(until: deadline) else { return cancelLog.count >= count }
        }
        return true
    }

    /// A chunk of output, as the executor's reader would hand it on.
    func print(_ text: String, _ stream: AttemptOutput.Stream) {
        Array(text.utf8).withUnsafeBytes { output.write($0, stream) }
    }

    /// Ends the attempt as an executor does: the streams ended, the
    /// output's ending taken, then the end reported on the engine's queue.
    func finish(_ result: AttemptResult, on queue: DispatchQueue? = nil) {
        output.end(.stdout)
        output.end(.stderr)
        var result = result
        if let first = cancels.first {
            // As every executor does: a stopped attempt ends with the first cancel's status and reason.
            result.status = first.status
            result.reason = first.reason
        }
        result.take(output.close())
        let queue = queue ?? self.queue!
        queue.async { [self, result] in end(result) }
    }

    fileprivate func ranOn(_ queue: DispatchQueue) { self.queue = queue }
}

/// A `RunEngine` whose attempts run on a `FakeExecutor`, through the same
/// `start(_:on:for:)` and `makeOutput` as the real executors.
final class FakeExecutorRun: @unchecked Sendable {
    // @unchecked: `outcome` is written by the run's thread before `finished` is signalled, read after.
    let engine: RunEngine
    let executor = FakeExecutor()
    let log = EventLog()
    private let directory: String
    private let finished = DispatchSemaphore(value: 0)
    private var outcome: RunOutcome?

    init(_ yaml: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        let plan = try Planner.plan(try workflow(yaml, sourceLocation: sourceLocation))
        directory = NSTemporaryDirectory() + "flowrun-executor-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let record = try RunRecord(baseDirectory: directory)
        let executor = executor
        engine = RunEngine(plan: plan, record: record, reporters: [log]) { engine, index, completion in
            let attempt = engine.start(engine.nodes[index].name, on: executor, for: index, completion: completion)
            (attempt as? FakeExecutorAttempt)?.ranOn(engine.queue)
            return attempt
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func start() {
        Thread { [self] in
            outcome = engine.run()
            finished.signal()
        }.start()
    }

    func exitCode(sourceLocation: Testing.SourceLocation = #_sourceLocation) -> Int32? {
        guard finished.wait(timeout: .now() + 20) == .success else {
            Issue.record("the run did not finish", sourceLocation: sourceLocation)
            return nil
        }
        finished.signal()
        return outcome?.exitCode
    }
}
