@testable import FlowrunModel
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunEngine
import Testing

/// Admission by declared resources (SPEC §13) with fake attempts: what
/// runs once the engine is at rest, as each attempt is ended by the test.
@Suite struct RunEngineResourcesTests {
    /// First come, first served per resource: `big` (4 CPUs) waits for `a`
    /// and claims the CPUs it lacks, so `small`, queued after it, does not
    /// take the one CPU `a` leaves free — a stream of small tasks cannot
    /// starve a big one.
    @Test func aBigTaskIsNotStarvedBySmallOnesQueuedAfterIt() throws {
        let run = try EngineUnderTest("""
            capacity: {cpus: 4, memory: 8G}
            tasks:
              a: {run: "true", resources: {cpus: 3}}
              big: {run: "true", resources: {cpus: 4}}
              small: {run: "true", resources: {cpus: 1}}
              free: {run: "true"}
            """)
        run.start()
        #expect(run.running(after: ["a", "free"]) == ["a", "free"], "small must not pass big")
        #expect(run.log.waiting("big").first?.waitingOn == ["cpus: needs 4 CPUs, 3 CPUs of 4 CPUs in use held by a"])
        run.attempts.end("a")
        #expect(run.running(after: ["big"]) == ["big", "free"])
        run.attempts.end("big")
        #expect(run.running(after: ["small"]) == ["small", "free"])
        run.attempts.end("small")
        run.attempts.end("free")
        #expect(run.exitCode() == 0)
    }

    /// An out-of-memory death grows the next attempt's memory by the
    /// factor, held from its next admission on (it waits for room), and
    /// never past `capacity`.
    @Test func anOutOfMemoryRetryHoldsMoreMemoryUpToCapacity() throws {
        let run = try EngineUnderTest("""
            capacity: {memory: 1G}
            tasks:
              big: {run: "true", resources: {memory: 300M}, retries: 2, retry_delay: 0s, retry_resources: {memory: x2}}
              side: {run: "true", resources: {memory: 500M}}
            """)
        run.start()
        #expect(run.running(after: ["big", "side"]) == ["big", "side"])
        var outOfMemory = AttemptResult(status: .failed, exitCode: 137, signal: 9, reason: "out of memory (limit 300 MiB)")
        outOfMemory.outOfMemory = true
        run.attempts.end("big", with: outOfMemory)
        #expect(run.running(after: ["side"]) == ["side"], "600 MiB does not fit beside side's 500 MiB")
        #expect(run.log.retrying("big").first?.memoryBytes == 600 << 20)
        run.attempts.end("side")
        #expect(run.running(after: ["big"]) == ["big"])
        run.attempts.end("big", with: outOfMemory)
        #expect(run.running(after: ["big"]) == ["big"])
        #expect(run.log.retrying("big").last?.memoryBytes == 1 << 30, "1.2 GiB capped at the capacity")
        run.attempts.end("big")
        #expect(run.exitCode() == 0)
    }

    /// A failure that is not an out-of-memory death retries with the same memory.
    @Test func anOrdinaryFailureRetriesWithTheSameMemory() throws {
        let run = try EngineUnderTest("""
            capacity: {memory: 1G}
            tasks:
              big: {run: "true", resources: {memory: 300M}, retries: 1, retry_delay: 0s, retry_resources: {memory: x2}}
            """)
        run.start()
        #expect(run.running(after: ["big"]) == ["big"])
        run.attempts.end("big", .failed)
        #expect(run.running(after: ["big"]) == ["big"])
        #expect(run.log.retrying("big").first?.memoryBytes == nil)
        run.attempts.end("big")
        #expect(run.exitCode() == 0)
    }
}
