@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import Testing

/// The engine's scheduling with fake attempts (no processes, FakeAttempts.swift):
/// the test decides when and how each attempt ends, and looks at what runs
/// once the engine is at rest. SPEC §3 (needs, when, if), §4 (limits), §8 (retries).
@Suite struct RunEngineSchedulingTests {
    static let chain = """
        name: chain
        max_parallel: 8
        tasks:
          a: {run: "true"}
          b: {run: "true", needs: a}
          c: {run: "true", needs: b}
          on-failure: {run: "true", needs: a, when: failure}
          always: {run: "true", needs: c, when: always}
          guarded: {run: "true", needs: a, if: "${{ tasks.a.exit_code == 0 }}"}
        """

    @Test func aFailureSkipsWhatNeedsItAndRunsWhatWaitsForFailure() throws {
        let run = try EngineUnderTest(Self.chain)
        run.start()
        #expect(run.running(after: ["a"]) == ["a"], "only a needs nothing")
        run.attempts.end("a", .failed)
        // b and c are skipped in a cascade; always runs after c settled, on-failure after a failed.
        #expect(run.running(after: ["on-failure", "always"]) == ["on-failure", "always"])
        #expect(run.status("b") == .skipped)
        #expect(run.status("c") == .skipped)
        #expect(run.status("guarded") == .skipped, "a failed: its if: is not evaluated, the need did not succeed")
        #expect(run.log.finished("b").first?.reason == "a need did not succeed")
        run.attempts.end("on-failure")
        run.attempts.end("always")
        #expect(run.exitCode() == 1, "a failed and was not allowed to")
        #expect(run.attempts.starts.sorted() == ["a#1", "always#1", "on-failure#1"])
    }

    @Test func successRunsTheChainAndSkipsWhatWaitsForFailure() throws {
        let run = try EngineUnderTest(Self.chain)
        run.start()
        #expect(run.running(after: ["a"]) == ["a"])
        run.attempts.end("a")
        #expect(run.running(after: ["b", "guarded"]) == ["b", "guarded"])
        #expect(run.status("on-failure") == .skipped)
        #expect(run.log.finished("on-failure").first?.reason == "no need failed")
        #expect(run.status("c") == .pending, "c waits for b")
        run.attempts.end("b")
        run.attempts.end("guarded")
        #expect(run.running(after: ["c"]) == ["c"])
        run.attempts.end("c")
        #expect(run.running(after: ["always"]) == ["always"])
        run.attempts.end("always")
        #expect(run.exitCode() == 0)
    }

    @Test func aFailedAttemptIsRetriedUntilOneSucceeds() throws {
        let run = try EngineUnderTest("""
            name: retries
            tasks:
              flaky: {run: "true", retries: 2, retry_delay: 1ms}
              after: {run: "true", needs: flaky}
            """)
        run.start()
        #expect(run.running(after: ["flaky"]) == ["flaky"])
        run.attempts.end("flaky", .failed)
        #expect(run.running(after: ["flaky"]) == ["flaky"], "attempt 2 after the delay")
        run.attempts.end("flaky", .timedOut)
        #expect(run.running(after: ["flaky"]) == ["flaky"], "a timed-out attempt is retried too")
        #expect(run.status("after") == .pending, "dependents wait for the last attempt")
        run.attempts.end("flaky")
        #expect(run.running(after: ["after"]) == ["after"])
        run.attempts.end("after")
        #expect(run.exitCode() == 0)
        #expect(run.attempts.starts == ["flaky#1", "flaky#2", "flaky#3", "after#1"])
        #expect(run.log.retrying("flaky").map(\.attempt) == [2, 3])
        #expect(run.log.finished("flaky").map(\.status) == [.succeeded], "one task_finished, after the last attempt")
    }

    @Test func retriesRunOutAndTheTaskFails() throws {
        let run = try EngineUnderTest("""
            name: retries-out
            tasks:
              flaky: {run: "true", retries: 1, retry_delay: 1ms}
              after: {run: "true", needs: flaky}
            """)
        run.start()
        #expect(run.running(after: ["flaky"]) == ["flaky"])
        run.attempts.end("flaky", .failed)
        #expect(run.running(after: ["flaky"]) == ["flaky"])
        run.attempts.end("flaky", .failed)
        #expect(run.exitCode() == 1)
        #expect(run.status("flaky") == .failed)
        #expect(run.status("after") == .skipped)
        #expect(run.attempts.starts == ["flaky#1", "flaky#2"])
    }

    @Test func maxParallelStartsTasksInPlanOrderAsSlotsFree() throws {
        let run = try EngineUnderTest("""
            name: run-slots
            max_parallel: 2
            tasks:
              t1: {run: "true"}
              t2: {run: "true"}
              t3: {run: "true"}
              t4: {run: "true"}
            """)
        run.start()
        #expect(run.running(after: ["t1", "t2"]) == ["t1", "t2"])
        #expect(run.log.events(.taskWaiting).compactMap(\.subject) == ["t3", "t4"])
        #expect(run.log.waiting("t3").first?.waitingOn == ["max_parallel 2/2"])
        run.attempts.end("t2")
        #expect(run.running(after: ["t3"]) == ["t1", "t3"], "the first waiter takes the freed slot")
        run.attempts.end("t1")
        #expect(run.running(after: ["t4"]) == ["t3", "t4"])
        run.attempts.end("t3")
        run.attempts.end("t4")
        #expect(run.exitCode() == 0)
    }

    @Test func weightedSemaphoresAndGroupConcurrencyHoldTasksBack() throws {
        let run = try EngineUnderTest("""
            name: limits
            max_parallel: 8
            semaphores: {db: 3}
            tasks:
              heavy: {run: "true", semaphores: {db: 2}}
              light: {run: "true", semaphores: [db]}
              later: {run: "true", semaphores: [db]}
            groups:
              g:
                concurrency: 1
                tasks:
                  x: {run: "true"}
                  y: {run: "true"}
            """)
        run.start()
        #expect(run.running(after: ["heavy", "light", "x"]) == ["heavy", "light", "x"])
        #expect(run.log.waiting("later").first?.waitingOn == ["semaphore db 3/3 held by heavy, light"])
        #expect(run.log.waiting("y").first?.waitingOn == ["group g 1/1 held by x"])
        run.attempts.end("heavy")
        #expect(run.running(after: ["later"]) == ["light", "later", "x"])
        run.attempts.end("x")
        #expect(run.running(after: ["y"]) == ["light", "later", "y"])
        for task in ["light", "later", "y"] { run.attempts.end(task) }
        #expect(run.exitCode() == 0)
    }

    /// The applied limits and deadline of `task_started` come from the plan
    /// step (what `--dry-run` prints), defaults included.
    @Test func taskStartedCarriesThePlansLimitsAndDeadlines() throws {
        let run = try EngineUnderTest("""
            name: applied
            max_parallel: 5
            semaphores: {db: 4}
            groups:
              g:
                concurrency: 2
                timeout: 1m
                tasks:
                  member: {run: "true", semaphores: {db: 3}, timeout: 9s}
            finally:
              cleanup: {run: "true"}
            """)
        run.start()
        #expect(run.running(after: ["member"]) == ["member"])
        let started = try #require(run.log.started("member").first)
        #expect(started.timeoutSeconds == 9)
        #expect(started.groupTimeoutSeconds == 60)
        #expect(started.limits == #"{"run":5,"group":{"name":"g","concurrency":2},"semaphores":[{"name":"db","weight":3,"capacity":4}]}"#)
        run.attempts.end("member")
        #expect(run.running(after: ["cleanup"]) == ["cleanup"])
        #expect(run.log.started("cleanup").first?.timeoutSeconds == 300, "finally's own budget, from the plan")
        run.attempts.end("cleanup")
        #expect(run.exitCode() == 0)
    }

    // MARK: - Deadlines, started from the plan's timers

    @Test func anAttemptPastItsTimeoutIsStoppedAsTimedOut() throws {
        let run = try EngineUnderTest("""
            name: deadline
            tasks:
              slow: {run: "true", timeout: 50ms}
              after: {run: "true", needs: slow, when: always}
            """)
        run.start()
        #expect(run.running(after: ["slow"]) == ["slow"])
        // The test never ends slow: the engine's timer does.
        #expect(run.running(after: ["after"]) == ["after"])
        #expect(run.status("slow") == .timedOut)
        #expect(run.log.finished("slow").first?.reason == "timed out after 50ms")
        run.attempts.end("after")
        #expect(run.exitCode() == 1)
    }

    @Test func aGroupPastItsDeadlineCancelsItsMembers() throws {
        let run = try EngineUnderTest("""
            name: group-deadline
            groups:
              g:
                timeout: 50ms
                tasks:
                  stuck: {run: "true"}
            tasks:
              after: {run: "true", needs: g, when: always}
            """)
        run.start()
        #expect(run.running(after: ["stuck"]) == ["stuck"])
        #expect(run.running(after: ["after"]) == ["after"])
        #expect(run.status("stuck") == .cancelled)
        #expect(run.status("g") == .timedOut)
        run.attempts.end("after")
        #expect(run.exitCode() == 1)
    }

    @Test func theRunsDeadlineStopsTheMainPhaseAndFinallyStillRuns() throws {
        let run = try EngineUnderTest("""
            name: run-deadline
            timeout: 50ms
            tasks:
              stuck: {run: "true"}
            finally:
              cleanup: {run: "true"}
            """)
        run.start()
        #expect(run.running(after: ["stuck"]) == ["stuck"])
        #expect(run.running(after: ["cleanup"]) == ["cleanup"])
        #expect(run.status("stuck") == .cancelled)
        run.attempts.end("cleanup")
        #expect(run.exitCode() == 124)
    }
}
