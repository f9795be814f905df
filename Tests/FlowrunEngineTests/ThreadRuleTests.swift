@testable import FlowrunEngine
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
}
