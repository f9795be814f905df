import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// `RunEndToEnd` runs beside the parallel tests, not after them
    /// (`AheadOfTheParallelTests`): a step it awaits is not queued behind
    /// every test that holds a thread of the cooperative pool.
    @Suite struct SerializedSuiteSchedulingTests {
        /// Queues blocking jobs at the parallel tests' priority (each holds
        /// its thread 0.25 s, eight per core: about 2 s), as the parallel
        /// suites do, and times how long this test waits to go on once they
        /// are queued. Behind them it would wait ≥ 1.75 s.
        @Test func aStepIsNotQueuedBehindThreadsHeldByTheParallelTests() async {
            let jobs = 8 * ProcessInfo.processInfo.activeProcessorCount
            let (queued, allQueued) = AsyncStream.makeStream(of: ContinuousClock.Instant.self)
            // The parallel tests' priority (without the trait: our own).
            let crowd = AheadOfTheParallelTests.crowdPriority.withLock { $0 } ?? Task.currentPriority
            let flood = Task.detached(priority: crowd) {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<jobs { group.addTask { usleep(250_000) } }
                    allQueued.yield(.now)
                    allQueued.finish()
                }
            }
            // Our wake-up is queued after the jobs: at the crowd's priority it waits for them.
            var asked = ContinuousClock.now
            for await instant in queued { asked = instant }
            let waited = ContinuousClock.now - asked
            await flood.value
            print("scheduling: a step of priority \(Task.currentPriority) waited \(waited) behind \(jobs) blocking jobs of priority \(crowd)")
            #expect(waited < .seconds(1), "a step waited \(waited) behind \(jobs) blocking jobs of priority \(crowd)")
        }
    }
}
