@testable import FlowrunEngine
import CFlowrunSystem
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing

/// `EventLoop` on its own: it only waits and dispatches. A ready descriptor
/// goes to its handler on the loop's thread, wake bytes to the wake
/// handlers, and the work handlers deliver runs on the engine's queue in one
/// batch, with `runAtBatchEnd` work after the batch's items.
@Suite struct EventLoopTests {
    final class Record: Sendable {
        let entries = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    }

    @Test func aReadyDescriptorsWorkRunsOnTheEngineQueueInOneBatch() throws {
        let engineQueue = DispatchQueue(label: "test.engine")
        let loop = EventLoop(engineQueue: engineQueue, threadName: "test.loop")
        let record = Record()
        var ends: [Int32] = [-1, -1]
        try #require(flowrun_pipe_cloexec(&ends) == 0)
        defer { close(ends[1]) }
        let readEnd = ends[0]
        loop.watch(readEnd) {
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
            let thread = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            record.add(thread == "test.loop\n" ? "handler on the loop" : "handler on \(thread)")
            loop.deliver {
                dispatchPrecondition(condition: .onQueue(engineQueue))
                record.add("first")
                _ = loop.runAtBatchEnd { record.add("batch end"); record.done.signal() }
            }
            loop.deliver { record.add("second") }
        }
        var byte: UInt8 = 1
        #expect(write(ends[1], &byte, 1) == 1)
        #expect(record.done.wait(timeout: .now() + 10) == .success, "the batch never ran")
        #expect(record.entries.withLock { $0 } == ["handler on the loop", "first", "second", "batch end"])
        // Outside a batch there is no batch end to wait for.
        #expect(engineQueue.sync { loop.runAtBatchEnd {} } == false)
    }

    @Test func wakeBytesReachEveryWakeHandlerOnce() {
        let loop = EventLoop(engineQueue: DispatchQueue(label: "test.engine"), threadName: "test.loop")
        let record = Record()
        loop.onWake { bytes in
            record.add("a: \(Array(bytes))")
        }
        loop.onWake { bytes in
            record.add("b: \(Array(bytes))")
            record.done.signal()
        }
        loop.wake(7)
        #expect(record.done.wait(timeout: .now() + 10) == .success, "no wake-up")
        #expect(record.entries.withLock { $0 } == ["a: [7]", "b: [7]"])
    }
}
