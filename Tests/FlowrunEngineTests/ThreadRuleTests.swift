@testable import FlowrunEngine
@testable import FlowrunRecord
import CFlowrunSystem
import FlowrunEvents
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing

/// The engine's thread rules are checked where state is entered, not only
/// written in comments (issue 33): an attempt is driven on the engine's
/// queue, a pump reader runs on the event loop's thread. A call from the
/// wrong place stops flowrun there instead of racing.
@Suite struct ThreadRuleTests {
    @Test func anAttemptStartedOnTheEngineQueueRunsAndReports() {
        let queue = DispatchQueue(label: "test.engine")
        let reported = DispatchSemaphore(value: 0)
        let status = Mutex<TaskStatus?>(nil)
        queue.sync {
            let attempt = SleepAttempt(.fixed(.zero), queue: queue, soon: ImmediateWork(queue: queue)) { result in
                status.withLock { $0 = result.status }
                reported.signal()
            }
            attempt.start()
        }
        #expect(reported.wait(timeout: .now() + 10) == .success)
        #expect(status.withLock { $0 } == .succeeded)
    }

    @Test func anAttemptStartedOffTheEngineQueueStopsFlowrun() async {
        await #expect(processExitsWith: .failure) {
            let queue = DispatchQueue(label: "test.engine")
            let attempt = SleepAttempt(.fixed(.seconds(1)), queue: queue, soon: ImmediateWork(queue: queue)) { _ in }
            attempt.start()
        }
    }

    @Test func workForTheEngineQueueAddedOffItStopsFlowrun() async {
        await #expect(processExitsWith: .failure) {
            let queue = DispatchQueue(label: "test.engine")
            ImmediateWork(queue: queue).add {}
        }
    }

    @Test func aFailedAttemptStartedOffTheEngineQueueStopsFlowrun() async {
        await #expect(processExitsWith: .failure) {
            let queue = DispatchQueue(label: "test.engine")
            FailedAttempt(reason: "bad URL", queue: queue) { _ in }.start()
        }
    }

    @Test func theLoopThreadCheckPassesInAHandlerOnTheLoop() throws {
        let loop = EventLoop(engineQueue: DispatchQueue(label: "test.engine"), threadName: "test.loop")
        let checked = DispatchSemaphore(value: 0)
        var ends: [Int32] = [-1, -1]
        try #require(flowrun_pipe_cloexec(&ends) == 0)
        defer { close(ends[1]) }
        let readEnd = ends[0]
        loop.watch(readEnd) {
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
            loop.preconditionOnLoopThread()
            checked.signal()
        }
        var byte: UInt8 = 1
        #expect(write(ends[1], &byte, 1) == 1)
        #expect(checked.wait(timeout: .now() + 10) == .success)
    }

    @Test func theLoopThreadCheckStopsFlowrunOnAnyOtherThread() async {
        await #expect(processExitsWith: .failure) {
            let loop = EventLoop(engineQueue: DispatchQueue(label: "test.engine"), threadName: "test.loop")
            // Wait until the loop runs (its thread is known), so only the thread differs.
            let running = DispatchSemaphore(value: 0)
            loop.onWake { _ in running.signal() }
            loop.wake()
            _ = running.wait(timeout: .now() + 10)
            loop.preconditionOnLoopThread()
        }
    }

    // Each executor's attempt is driven on the engine's queue only: a
    // start or a cancel from anywhere else stops flowrun there. Each check
    // has its control: the same call on the queue runs, in a process of its own too.

    @Test func aProcessAttemptStartedOnTheEngineQueueRuns() async {
        await #expect(processExitsWith: .success) { ThreadRuleTests.startProcessAttempt(onQueue: true) }
    }

    @Test func aProcessAttemptStartedOffTheEngineQueueStopsFlowrun() async {
        await #expect(processExitsWith: .failure) { ThreadRuleTests.startProcessAttempt(onQueue: false) }
    }

    @Test func anHTTPAttemptCancelledOnTheEngineQueueRuns() async {
        await #expect(processExitsWith: .success) { ThreadRuleTests.cancelHTTPAttempt(onQueue: true) }
    }

    @Test func anHTTPAttemptCancelledOffTheEngineQueueStopsFlowrun() async {
        await #expect(processExitsWith: .failure) { ThreadRuleTests.cancelHTTPAttempt(onQueue: false) }
    }

    @Test func aSlurmAttemptCancelledOnTheEngineQueueRuns() async {
        await #expect(processExitsWith: .success) { ThreadRuleTests.cancelSlurmAttempt(onQueue: true) }
    }

    @Test func aSlurmAttemptCancelledOffTheEngineQueueStopsFlowrun() async {
        await #expect(processExitsWith: .failure) { ThreadRuleTests.cancelSlurmAttempt(onQueue: false) }
    }

    /// Runs `body` on `queue`, or on the calling thread. The record's folder
    /// goes first: nothing is written to it by then, and the call may stop the process.
    static func call(onQueue: Bool, _ queue: DispatchQueue, removing record: RunRecord, _ body: () -> Void) {
        try? FileManager.default.removeItem(atPath: (record.directory as NSString).deletingLastPathComponent)
        if onQueue { queue.sync(execute: body) } else { body() }
    }

    static func startProcessAttempt(onQueue: Bool) {
        let queue = DispatchQueue(label: "test.engine")
        let (record, output) = recordAndOutput(queue)
        let loop = EventLoop(engineQueue: queue, threadName: "test.loop")
        let reaper = try! ChildReaper()
        let setup = ProcessAttempt.Setup(
            shell: "/bin/sh", script: "true", environment: [], inherited: nil, workingDirectory: nil,
            logPathForFiles: "t", attempt: 1, record: record.folder, outputFileName: "t.1",
            tree: ProcessTreeMarker(runID: "thread-rule", serial: 1), grace: .seconds(1))
        let executor = LocalProcessExecutor(
            queue: queue, pump: OutputPump(loop: loop), reaper: reaper, killer: ProcessTreeKiller(),
            escapeesExist: { false }, descriptorsFit: { true }, waitForDescriptors: { _ in false })
        let attempt = executor.attempt(setup, output: output) { _ in }
        call(onQueue: onQueue, queue, removing: record) { attempt.start() }
    }

    static func cancelHTTPAttempt(onQueue: Bool) {
        let queue = DispatchQueue(label: "test.engine")
        let (record, _) = recordAndOutput(queue)
        let request = HTTPExecutor.Request(
            method: "GET", url: "http://127.0.0.1:9/", headers: [], body: nil, expect: 200,
            log: record.log(index: 0, name: "t", exists: false), secretMasker: nil)
        let attempt = HTTPExecutor(queue: queue, descriptorsFit: { true }, waitForDescriptors: { _ in false })
            .attempt(request, output: nil) { _ in }
        call(onQueue: onQueue, queue, removing: record) { attempt.cancel(as: .cancelled, reason: "test", through: TeardownStep.immediate) }
    }

    static func cancelSlurmAttempt(onQueue: Bool) {
        let queue = DispatchQueue(label: "test.engine")
        let (record, output) = recordAndOutput(queue)
        let session = SlurmSession(
            queue: queue, reaper: try! ChildReaper(),
            tools: SlurmTools(sbatch: "/bin/false", squeue: "/bin/false", scancel: "/bin/false", sacct: "/bin/false"),
            environment: [], runID: "thread-rule", folder: record.directory)
        let job = SlurmExecutor.Job(
            spec: SlurmTaskSpec(command: ["/bin/true"], environment: [], workingDirectory: "/", files: SlurmFiles(stem: record.directory + "/t.1"), killGrace: .seconds(1)),
            task: "t", batchKey: nil, sbatchArguments: [], concurrency: nil, onState: { _, _ in })
        let attempt = SlurmExecutor(session: session, queue: queue).attempt(job, output: output) { _ in }
        call(onQueue: onQueue, queue, removing: record) { attempt.cancel(as: .cancelled, reason: "test", through: TeardownStep.graceful(.seconds(1))) }
        withExtendedLifetime(session) {}
    }

    /// A run record in a fresh folder (removed by `call`), and an attempt's output sink in it.
    static func recordAndOutput(_ queue: DispatchQueue) -> (RunRecord, AttemptOutput) {
        let directory = NSTemporaryDirectory() + "flowrun-thread-rule-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let record = try! RunRecord(baseDirectory: directory)
        let output = AttemptOutput(
            log: record.log(index: 0, name: "t", exists: false), capture: StdoutCapture(), masker: nil, queue: queue,
            onLine: nil, onProgress: { _ in })
        return (record, output)
    }
}
