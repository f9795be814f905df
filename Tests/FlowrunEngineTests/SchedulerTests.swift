@testable import FlowrunModel
@testable import FlowrunEvents
@testable import FlowrunEngine
import Dispatch
import Testing

/// The scheduler's rules without a process, an engine or a timer
/// (SchedulerUnderTest.swift): needs and dependents, `when:` and skips,
/// limits, deadlines on a fake clock, retries, joins, stopping, sequences
/// and `finally`. SPEC §3, §4, §5, §7, §8, §10.
@Suite struct SchedulerTests {
    @Test func aTaskRunsOnceItsNeedsSettledAndItsDependentsFollow() throws {
        let run = try SchedulerUnderTest("""
            tasks:
              a: {run: "true"}
              b: {run: "true", needs: a}
              c: {run: "true", needs: [a, b]}
            """)
        run.start()
        #expect(run.runningNames == ["a"])
        #expect(run.withScheduler { $0.nodes[run.index("c")].unsettledNeeds } == 2)
        run.end("a")
        #expect(run.runningNames == ["b"], "c still waits for b")
        run.end("b")
        #expect(run.runningNames == ["c"])
        run.end("c")
        #expect(run.allSettled)
        #expect(run.starts == ["a#1", "b#1", "c#1"])
    }

    @Test func whenSuccessSkipsAndPropagatesWhenFailureAndAlwaysRun() throws {
        let run = try SchedulerUnderTest("""
            tasks:
              a: {run: "true"}
              b: {run: "true", needs: a}
              c: {run: "true", needs: b}
              on-failure: {run: "true", needs: a, when: failure}
              always: {run: "true", needs: c, when: always}
            """)
        run.start()
        run.end("a", .failed)
        #expect(run.status("b") == .skipped)
        #expect(run.status("c") == .skipped, "the skip passes down the chain")
        #expect(run.reason("c") == "a need did not succeed")
        #expect(run.runningNames == ["on-failure", "always"])
        run.end("on-failure")
        run.end("always")
        #expect(run.allSettled)
    }

    @Test func whenFailureIsSkippedWhenNoNeedFailedAndMarkedAsItsOwnChoice() throws {
        let run = try SchedulerUnderTest("""
            tasks:
              a: {run: "true"}
              on-failure: {run: "true", needs: a, when: failure}
            """)
        run.start()
        run.end("a")
        #expect(run.status("on-failure") == .skipped)
        #expect(run.reason("on-failure") == "no need failed")
        #expect(run.withScheduler { $0.nodes[run.index("on-failure")].skippedByOwnCondition })
    }

    @Test func maxParallelBoundsWhatRunsAndAFreedSlotGoesToTheNextInOrder() throws {
        let run = try SchedulerUnderTest("""
            max_parallel: 2
            tasks:
              a: {run: "true"}
              b: {run: "true"}
              c: {run: "true"}
              d: {run: "true"}
            """)
        run.start()
        #expect(run.runningNames == ["a", "b"])
        #expect(run.status("c") == .waiting)
        run.end("b")
        #expect(run.runningNames == ["a", "c"])
        run.end("a")
        #expect(run.runningNames == ["c", "d"])
        #expect(run.inUse(0) == 2)
    }

    @Test func aGroupsConcurrencyBoundsItsMembers() throws {
        let run = try SchedulerUnderTest("""
            max_parallel: 8
            groups:
              g:
                concurrency: 2
                tasks:
                  m1: {run: "true"}
                  m2: {run: "true"}
                  m3: {run: "true"}
            """)
        run.start()
        #expect(run.runningNames == ["m1", "m2"])
        run.end("m1")
        #expect(run.runningNames == ["m2", "m3"])
        run.end("m2")
        run.end("m3")
        #expect(run.status("g") == .succeeded)
        #expect(run.allSettled)
    }

    @Test func semaphoresHoldTheirWeights() throws {
        let run = try SchedulerUnderTest("""
            max_parallel: 8
            semaphores: {db: 3}
            tasks:
              heavy: {run: "true", semaphores: {db: 2}}
              light: {run: "true", semaphores: [db]}
              later: {run: "true", semaphores: [db]}
            """)
        run.start()
        #expect(run.runningNames == ["heavy", "light"], "2 + 1 of 3: later waits")
        run.end("light")
        #expect(run.runningNames == ["heavy", "later"])
        run.end("heavy")
        run.end("later")
        #expect(run.allSettled)
    }

    @Test func aBigTaskIsNotStarvedByCPUsSmallerOnesWouldTake() throws {
        let run = try SchedulerUnderTest("""
            capacity: {cpus: 4, memory: 8G}
            tasks:
              a: {run: "true", resources: {cpus: 3}}
              big: {run: "true", resources: {cpus: 4}}
              small: {run: "true", resources: {cpus: 1}}
              free: {run: "true"}
            """)
        run.start()
        #expect(run.runningNames == ["a", "free"], "small fits beside a but must not pass big")
        run.end("a")
        #expect(run.runningNames == ["big", "free"])
        run.end("big")
        #expect(run.runningNames == ["small", "free"])
    }

    @Test func memoryIsAdmittedAgainstCapacity() throws {
        let run = try SchedulerUnderTest("""
            capacity: {memory: 1G}
            tasks:
              a: {run: "true", resources: {memory: 600M}}
              b: {run: "true", resources: {memory: 600M}}
            """)
        run.start()
        #expect(run.runningNames == ["a"])
        run.end("a")
        #expect(run.runningNames == ["b"])
    }

    @Test func aTaskTimesOutOnTheClockItIsGiven() throws {
        let run = try SchedulerUnderTest("""
            tasks:
              slow: {run: "true", timeout: 5s}
              after: {run: "true", needs: slow}
            """)
        run.start()
        #expect(run.due(.timeout(run.index("slow"))) == 1_005)
        run.advance(4.9)
        #expect(run.runningNames == ["slow"])
        run.advance(0.2)
        #expect(run.status("slow") == .timedOut)
        #expect(run.status("after") == .skipped)
        #expect(run.due(.timeout(run.index("slow"))) == nil)
    }

    @Test func aGroupsDeadlineCancelsItsMembersAndTimesItOut() throws {
        let run = try SchedulerUnderTest("""
            groups:
              g:
                timeout: 10s
                tasks:
                  m1: {run: "true"}
                  m2: {run: "true"}
            """)
        run.start()
        run.end("m1")
        run.advance(10)
        #expect(run.cancelReason("m2") == .groupTimeout)
        #expect(run.status("g") == .timedOut)
        #expect(run.allSettled)
    }

    @Test func aJoinsDeadlineStartsWithItsFirstMemberAndCancelsTheMissing() throws {
        let run = try SchedulerUnderTest("""
            max_parallel: 1
            tasks:
              a: {run: "true"}
              b: {run: "true"}
            joins:
              both: {wait: [a, b], need: all, timeout: 3s, on_timeout: continue}
            """)
        run.start()
        #expect(run.due(.join(run.index("both"))) == 1_003, "the clock starts when a starts")
        run.advance(1)
        run.end("a")
        #expect(run.runningNames == ["b"])
        run.advance(2)
        #expect(run.status("both") == .succeeded, "on_timeout: continue")
        #expect(run.withScheduler { $0.nodes[run.index("both")].joinTimedOut })
        #expect(run.cancelReason("b") == .joinSettled)
    }

    @Test func theRunsDeadlineStopsTheMainPhaseThenFinallyRuns() throws {
        let run = try SchedulerUnderTest("""
            timeout: 60s
            tasks:
              long: {run: "true"}
              next: {run: "true", needs: long}
            finally:
              cleanup: {run: "true"}
            """)
        run.armRunDeadline(.seconds(60))
        run.start()
        run.advance(60)
        #expect(run.stopping == .runTimeout)
        #expect(run.cancelReason("long") == .runTimeout)
        #expect(run.status("next") == .cancelled)
        #expect(run.runningNames == ["cleanup"])
        run.end("cleanup")
        #expect(run.allSettled)
    }

    @Test func retriesBackOffOnTheClockHoldingNoSlot() throws {
        let run = try SchedulerUnderTest("""
            max_parallel: 1
            tasks:
              flaky: {run: "true", retries: 2, retry_delay: 10s, backoff: 2}
              other: {run: "true"}
            """)
        run.start()
        #expect(run.runningNames == ["flaky"])
        run.end("flaky", .failed)
        #expect(run.runningNames == ["other"], "the backing-off task holds no slot")
        #expect(run.due(.retry(run.index("flaky"))) == 1_010)
        run.end("other")
        run.advance(9.9)
        #expect(run.runningNames.isEmpty)
        run.advance(0.2)
        #expect(run.runningNames == ["flaky"])
        run.end("flaky", .failed)
        #expect(run.due(.retry(run.index("flaky"))) == 1_010.1 + 20, "10s × 2¹")
        run.advance(20)
        run.end("flaky")
        #expect(run.status("flaky") == .succeeded)
        #expect(run.starts == ["flaky#1", "other#1", "flaky#2", "flaky#3"])
    }

    @Test func aRetrysDelayEndsJustPastTheRunsDeadline() throws {
        let run = try SchedulerUnderTest("""
            timeout: 30s
            tasks:
              flaky: {run: "true", retries: 1, retry_delay: 1h}
            """)
        run.armRunDeadline(.seconds(30))
        run.start()
        run.advance(10)
        let delay = run.withScheduler { $0.retryDelay(for: run.index("flaky"), after: 1, runStartedAt: 1_000) }
        #expect(delay == .milliseconds(20_001))
    }

    @Test func aJoinAtQuorumCancelsTheLosers() throws {
        let run = try SchedulerUnderTest("""
            tasks:
              a: {run: "true"}
              b: {run: "true"}
              c: {run: "true"}
              use: {run: "true", needs: fastest}
            joins:
              fastest: {wait: [a, b, c], need: 1}
            """)
        run.start()
        run.end("b")
        #expect(run.status("fastest") == .succeeded)
        #expect(run.reason("fastest") == "1/3 succeeded")
        #expect(run.cancelReason("a") == .joinSettled)
        #expect(run.cancelReason("c") == .joinSettled)
        #expect(run.withScheduler { $0.cancellingJoin(of: run.index("a")) } == run.index("fastest"))
        #expect(run.runningNames == ["use"])
    }

    @Test func aJoinOutOfReachFailsAndLetsTheRestFinishUnlessFailFast() throws {
        let run = try SchedulerUnderTest("""
            tasks:
              a: {run: "true"}
              b: {run: "true"}
              c: {run: "true"}
            joins:
              two: {wait: [a, b, c], need: 2}
            """)
        run.start()
        run.end("a", .failed)
        #expect(run.status("two") == .running, "its clock started with its members")
        run.end("b", .failed)
        #expect(run.status("two") == .failed)
        #expect(run.reason("two") == "only 0 of 3 can succeed, 2 needed")
        #expect(run.runningNames == ["c"], "make -k: c finishes")
        // Under fail_fast the same verdict cancels c (the run stops anyway).
        let two = run.index("two")
        #expect(run.withScheduler { $0.losers(of: two, completingAs: .failed, failFast: false) }.isEmpty)
        #expect(run.withScheduler { $0.losers(of: two, completingAs: .failed, failFast: true) } == [run.index("c")])
    }

    @Test func failFastStopsTheMainPhaseAndFinallyStillRuns() throws {
        let run = try SchedulerUnderTest("""
            fail_fast: true
            max_parallel: 2
            tasks:
              a: {run: "true"}
              b: {run: "true"}
              c: {run: "true"}
              allowed: {run: "true", needs: a, continue_on_error: true}
            finally:
              cleanup: {run: "true"}
            """)
        run.start()
        #expect(run.runningNames == ["a", "b"])
        run.end("a", .failed)
        #expect(run.stopping == .failFast)
        #expect(run.cancelReason("b") == .failFast)
        #expect(run.cancelReason("c") == .failFast)
        #expect(run.runningNames == ["cleanup"])
    }

    @Test func aFailureAllowedByContinueOnErrorDoesNotFailFast() throws {
        let run = try SchedulerUnderTest("""
            fail_fast: true
            tasks:
              a: {run: "true", continue_on_error: true}
              b: {run: "true", needs: a}
            """)
        run.start()
        run.end("a", .failed)
        #expect(run.stopping == nil)
        #expect(run.runningNames == ["b"], "a failure allowed is OK for when: success")
    }

    @Test func aSequentialGroupRunsInOrderAndAFailureSkipsTheRest() throws {
        let run = try SchedulerUnderTest("""
            max_parallel: 8
            groups:
              steps:
                sequential: true
                tasks:
                  one: {run: "true"}
                  two: {run: "true"}
                  three: {run: "true"}
            """)
        run.start()
        #expect(run.runningNames == ["one"])
        run.end("one")
        #expect(run.runningNames == ["two"])
        run.end("two", .failed)
        #expect(run.status("three") == .skipped)
        #expect(run.reason("three") == "two did not succeed")
        #expect(run.status("steps") == .failed)
    }

    @Test func finallyWaitsForTheWholeMainPhase() throws {
        let run = try SchedulerUnderTest("""
            tasks:
              a: {run: "true"}
              b: {run: "true", needs: a}
            finally:
              cleanup: {run: "true"}
            """)
        run.start()
        #expect(run.runningNames == ["a"])
        run.end("a")
        #expect(run.runningNames == ["b"], "finally waits for b too")
        #expect(!run.withScheduler { $0.finallyStarted })
        run.end("b")
        #expect(run.runningNames == ["cleanup"])
        run.end("cleanup")
        #expect(run.allSettled)
    }

    @Test func aFamilysPoolIsMadeWhenATaskFirstNamesIt() throws {
        let run = try SchedulerUnderTest("""
            semaphores: {db: 2, "batch-*": 1}
            tasks:
              a: {run: "true"}
            """)
        let declared = run.withScheduler { $0.semaphoreResource(named: "db") }
        #expect(declared != nil)
        let first = try #require(run.withScheduler { $0.semaphoreResource(named: "batch-7") })
        #expect(run.withScheduler { $0.semaphoreResource(named: "batch-7") } == first, "one pool per name")
        #expect(run.withScheduler { $0.pool.capacity(of: first) } == 1)
        #expect(run.withScheduler { $0.semaphoreResource(named: "nothing") } == nil)
    }

    @Test func aFanOutsWindowIsTheSlotsItsMembersCanHoldAndSixteenMore() throws {
        let run = try SchedulerUnderTest("""
            max_parallel: 8
            semaphores: {db: 6}
            tasks:
              a: {run: "true"}
            """)
        let db = try #require(run.withScheduler { $0.semaphoreResource(named: "db") })
        #expect(run.withScheduler { $0.fanOutWindow(for: SlotPool.Demand(amounts: [0: 1])) } == 8 + 16)
        #expect(run.withScheduler { $0.fanOutWindow(for: SlotPool.Demand(amounts: [0: 1, db: 2])) } == 3 + 16)
    }

    @Test func aSuccessHandsItsSlotToAWaiterFirstUnlessAJoinCounts() throws {
        let run = try SchedulerUnderTest("""
            tasks:
              plain: {run: "true"}
              counted: {run: "true"}
            joins:
              j: {wait: [counted]}
            """)
        #expect(run.withScheduler { $0.startsWaitersFirst(run.index("plain")) })
        #expect(!run.withScheduler { $0.startsWaitersFirst(run.index("counted")) }, "the join may cancel waiters")
    }

    @Test func aFanOutsStatusFollowsItsCounts() throws {
        let run = try SchedulerUnderTest("""
            groups:
              g:
                foreach: [a, b]
                task: {name: "m-${{ item }}", run: "true"}
            """)
        let g = run.index("g")
        func outcome(_ counts: Scheduler.FanOutCounts, feedFailure: String? = nil, sequential: Bool = false) -> Scheduler.GroupOutcome {
            run.withScheduler { $0.fanOutOutcome(g, counts, feedFailure: feedFailure, sequential: sequential) }
        }
        #expect(outcome(.init(), feedFailure: "foreach: bad").status == .failed)
        #expect(outcome(.init()) == .init(status: .succeeded, why: "no members"))
        #expect(outcome(.init(created: 2, settled: 2, failed: 1, firstStop: .failFast)).status == .failed, "a failure outranks a cancel")
        #expect(outcome(.init(created: 2, settled: 2, firstStop: .failFast)) == .init(status: .cancelled, why: "fail_fast", reason: .failFast))
        #expect(outcome(.init(created: 2, settled: 2, skipped: 2)).status == .skipped)
        #expect(outcome(.init(created: 2, settled: 2, skipped: 2, skippedByOwnCondition: 2), sequential: true).status == .succeeded,
                "a sequence whose members each chose to skip succeeds")
        #expect(outcome(.init(created: 2, settled: 2, skipped: 1)).status == .succeeded)
    }

    @Test func deadlinesMoveLaterByTheTimeTheRunWasStopped() {
        var deadlines = Deadlines()
        deadlines.arm(.timeout(3), after: .seconds(5), now: 100)
        deadlines.arm(.run, after: .seconds(2), now: 100)
        #expect(deadlines.expired(at: 105) == [.run, .timeout(3)], "earliest first")
        deadlines.postpone(by: 10)
        #expect(deadlines.expired(at: 105).isEmpty)
        #expect(deadlines.due[.timeout(3)] == 115)
    }

    /// The scheduler is confined to its owner's queue: a change from
    /// another thread traps rather than races.
    @Test func aChangeOffItsQueueTraps() async {
        await #expect(processExitsWith: .failure) {
            var scheduler = Scheduler(
                pool: SlotPool(capacities: [1], names: ["max_parallel"]), clock: FakeSchedulerClock(), runTimeout: nil,
                queue: DispatchQueue(label: "owner"))
            _ = scheduler.beginStopping(.signal)
        }
    }

    /// The engine reaches the scheduler's nodes in place: a write through
    /// `RunEngine.nodes` copies no array (the nodes' storage stays put).
    @Test func theEnginesNodesAreTheSchedulersWithoutACopy() throws {
        let run = try EngineUnderTest("""
            tasks:
              a: {run: "true"}
              b: {run: "true"}
            """)
        let engine = run.engine
        let (before, after) = engine.queue.sync {
            let before = engine.scheduler.nodes.fixed.withUnsafeBufferPointer { $0.baseAddress }
            engine.nodes[1].hasLog = true
            let after = engine.scheduler.nodes.fixed.withUnsafeBufferPointer { $0.baseAddress }
            return (before, after)
        }
        #expect(before == after)
        #expect(engine.queue.sync { engine.scheduler.nodes[1].hasLog })
    }
}
