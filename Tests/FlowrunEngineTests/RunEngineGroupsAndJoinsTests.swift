@testable import FlowrunModel
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import Testing

/// Fan-outs, groups and joins in the engine with fake attempts (no
/// processes, FakeAttempts.swift). SPEC §4 (groups), §5 (joins).
@Suite struct RunEngineGroupsAndJoinsTests {
    @Test func aFanOutStartsItsMembersWhenItsGroupStartsAndKeepsItsConcurrency() throws {
        let run = try EngineUnderTest("""
            name: fan-out
            max_parallel: 8
            tasks:
              first: {run: "true"}
            groups:
              fetch:
                needs: first
                concurrency: 2
                foreach: [eu, us, ap]
                task: {name: "fetch-${{ item }}", run: "true"}
            """)
        run.start()
        #expect(run.running(after: ["first"]) == ["first"], "members wait for the group's needs")
        run.attempts.end("first")
        #expect(run.running(after: ["fetch-eu", "fetch-us"]) == ["fetch-eu", "fetch-us"])
        #expect(run.status("fetch") == .running)
        run.attempts.end("fetch-us")
        #expect(run.running(after: ["fetch-ap"]) == ["fetch-eu", "fetch-ap"])
        run.attempts.end("fetch-eu")
        run.attempts.end("fetch-ap", .failed)
        #expect(run.exitCode() == 1)
        #expect(run.status("fetch") == .failed, "a member failed")
        #expect(run.log.groupFinished("fetch").first?.members == 3)
    }

    @Test func aJoinThatHasWhatItNeedsCancelsTheMembersStillRunning() throws {
        let run = try EngineUnderTest("""
            name: first-wins
            max_parallel: 8
            tasks:
              mirror-a: {run: "true"}
              mirror-b: {run: "true"}
              mirror-c: {run: "true"}
              use: {run: "true", needs: fastest}
            joins:
              fastest: {wait: [mirror-a, mirror-b, mirror-c], need: 1}
            """)
        run.start()
        #expect(run.running(after: ["mirror-a", "mirror-b", "mirror-c"]) == ["mirror-a", "mirror-b", "mirror-c"])
        run.attempts.end("mirror-b")
        // The join succeeds; a and c are stopped by the engine (their fake attempts end as cancelled).
        #expect(run.running(after: ["use"]) == ["use"])
        #expect(run.status("fastest") == .succeeded)
        #expect(run.status("mirror-a") == .cancelled)
        #expect(run.status("mirror-c") == .cancelled)
        #expect(run.log.finished("mirror-a").first?.cancelledBy == "fastest")
        run.attempts.end("use")
        #expect(run.exitCode() == 0, "members a join no longer needed do not fail the run")
    }

    @Test func aJoinThatCanNoLongerHaveWhatItNeedsFails() throws {
        let run = try EngineUnderTest("""
            name: quorum
            max_parallel: 8
            tasks:
              a: {run: "true"}
              b: {run: "true"}
              c: {run: "true"}
              after: {run: "true", needs: two}
            joins:
              two: {wait: [a, b, c], need: 2}
            """)
        run.start()
        #expect(run.running(after: ["a", "b", "c"]) == ["a", "b", "c"])
        run.attempts.end("a", .failed)
        run.settle()
        #expect(run.status("two") == .running, "two of b and c can still succeed")
        run.attempts.end("b", .failed)
        run.settle()
        #expect(run.status("two") == .failed)
        #expect(run.status("after") == .skipped)
        // Issue 31: a failed join lets its running members finish (make -k, go-task); only a quorum, a deadline or fail_fast cancels them.
        #expect(run.status("c") == .running, "left to finish")
        run.attempts.end("c", .succeeded)
        run.settle()
        #expect(run.status("c") == .succeeded)
        #expect(run.exitCode() == 1)
    }
}
