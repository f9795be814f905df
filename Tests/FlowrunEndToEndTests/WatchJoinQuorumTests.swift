import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// `flowrun watch` and a `need: 2` join (SPEC §5, §14): kept successes
    /// count toward the quorum first. When they meet it, an edited member
    /// is not started — `cancelled`, not needed, as a fresh run's member past
    /// a met quorum — and the run's exit code follows the join; when the
    /// edited member was one of them, it runs and counts as in a run, and so
    /// does a member the quorum did not need before (it has no result to keep).
    /// Every wait is a handshake on the record (a run's summary), never a sleep.
    @Suite struct WatchJoinQuorumTests {
        typealias Watch = WatchTests

        /// `a` and `b` succeed at once; `c` holds while the file `hold` is
        /// there (not a source) so that the first run's quorum cancels it,
        /// else exits with the number in `c.txt` (4 when `c.fails` is there)
        /// a second later (after `a`: a quorum met first would cancel `a`, as in a run);
        /// `a` fails when `a.txt` says `fail`.
        static func start(_ sandbox: RunSandbox) throws -> LiveFlowrun {
            try Watch.write(sandbox, "a.txt", "1\n")
            try Watch.write(sandbox, "b.txt", "1\n")
            try Watch.write(sandbox, "c.txt", "0\n")
            try Watch.write(sandbox, "hold", "")
            return try Watch.watch(sandbox, """
                tasks:
                  a: { sources: [a.txt], run: 'read v < a.txt; echo "a $v"; [ "$v" != fail ]' }
                  b: { sources: [b.txt], run: echo b }
                  c: { sources: [c.txt], run: 'read v < c.txt; if [ -e hold ]; then sleep 60; fi; sleep 1; if [ -e c.fails ]; then exit 4; fi; exit "$v"' }
                  after: { needs: [quorum], run: echo after }
                joins:
                  quorum: { wait: [a, b, c], need: 2 }
                """)
        }

        /// The first run: `a` and `b` met the quorum, `c` was cancelled as not needed.
        static func firstRun(_ sandbox: RunSandbox) throws {
            #expect(Watch.waitForRuns(sandbox, 1))
            let first = try #require(Watch.runs(sandbox).first)
            #expect(first.statuses["c"] == "cancelled" && first.statuses["a"] == "succeeded" && first.statuses["b"] == "succeeded", "\(first.statuses)")
        }

        static func second(_ sandbox: RunSandbox, _ live: LiveFlowrun) throws -> (run: RunRecordFiles, ended: LiveFlowrun.Ended) {
            #expect(Watch.waitForRuns(sandbox, 2))
            live.signalGroup(SIGINT)
            let ended = live.finish()
            let runs = Watch.runs(sandbox)
            return (try #require(runs.count >= 2 ? runs[1] : nil, "\(ended)"), ended)
        }

        static func join(_ run: RunRecordFiles) -> [String: Any]? { run.events("join_completed").first }

        /// (a) `c` edited to fail: `a` and `b` kept meet the quorum, so `c` is
        /// not started; the run exits 0. Before, `c` ran, failed and failed
        /// the run while the join said succeeded.
        @Test func anEditedMemberOfAJoinWhoseKeptResultsMeetItsQuorumIsNotRun() throws {
            let sandbox = try RunSandbox()
            let live = try Self.start(sandbox)
            try Self.firstRun(sandbox)
            try Watch.write(sandbox, "c.txt", "3\n")
            let (second, ended) = try Self.second(sandbox, live)
            #expect(Watch.started(second) == ["after"], "\(second.names("task_started"))")
            #expect(second.statuses["c"] == "cancelled", "\(second.statuses)")
            let cancelled = second.finished("c")
            #expect(cancelled?["reason"] as? String == "join_settled" && cancelled?["cancelled_by"] as? String == "quorum", "\(String(describing: cancelled))")
            #expect(Self.join(second)?["status"] as? String == "succeeded", "\(second.events("join_completed"))")
            #expect(second.statuses["after"] == "succeeded")
            #expect(second.exitCode == 0, "\(second.summary)")
            // The block printed again: the kept members' values, `c` not needed.
            let blocks = ended.stdout.components(separatedBy: "join     quorum succeeded: 2/3 succeeded (2 needed)").count - 1
            #expect(blocks == 2, "\(ended.stdout)")
            #expect(ended.stdout.components(separatedBy: "not needed").count - 1 >= 2, "\(ended.stdout)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// (b) `a`, one of the quorum's successes, edited: its result is not
        /// kept, `b` alone is short of the quorum, so `a` runs and counts;
        /// `c`, not needed before, runs with it (still holding) and is not
        /// needed again once `a` has succeeded.
        @Test func anEditedMemberThatWasOneOfTheQuorumsSuccessesRunsAgain() throws {
            let sandbox = try RunSandbox()
            let live = try Self.start(sandbox)
            try Self.firstRun(sandbox)
            try Watch.write(sandbox, "a.txt", "2\n")
            let (second, ended) = try Self.second(sandbox, live)
            // `c` may be cancelled before its start is written: not asserted started.
            #expect(Watch.started(second).subtracting(["c"]) == ["a", "after"], "\(second.names("task_started"))")
            #expect(second.stdout("a") == "a 2")
            #expect(second.statuses["c"] == "cancelled" && second.finished("c")?["reason"] as? String == "join_settled", "\(second.statuses)")
            #expect(Self.join(second)?["status"] as? String == "succeeded", "\(second.events("join_completed"))")
            #expect(second.exitCode == 0, "\(second.summary)")
            #expect(ended.stdout.contains("a 2"), "\(ended.stdout)")
        }

        /// (c) `a`, one of the quorum's successes, edited to fail: it runs
        /// with `c` (not needed before), which fails too; the quorum is out
        /// of reach as in a run — the join fails, what needs it is skipped,
        /// the run exits 1.
        @Test func aFailureOfAnEditedMemberTheQuorumNeededFailsTheJoinAsInARun() throws {
            let sandbox = try RunSandbox()
            let live = try Self.start(sandbox)
            try Self.firstRun(sandbox)
            try FileManager.default.removeItem(atPath: sandbox.file("hold"))
            try Watch.write(sandbox, "c.fails", "")
            try Watch.write(sandbox, "a.txt", "fail\n")
            let (second, _) = try Self.second(sandbox, live)
            #expect(Watch.started(second) == ["a", "c"], "\(second.names("task_started"))")
            #expect(second.statuses["a"] == "failed" && second.statuses["c"] == "failed", "\(second.statuses)")
            let join = Self.join(second)
            #expect(join?["status"] as? String == "failed", "\(second.events("join_completed"))")
            #expect(second.statuses["after"] == "skipped", "\(second.statuses)")
            #expect(second.exitCode == 1, "\(second.summary)")
        }
        /// (d) `a` edited to fail, and `c`, which the first run's quorum did
        /// not need, would succeed now: a fresh run runs `c`, the join has
        /// `b` and `c`, succeeds, and what needs it runs (the run exits 1 for
        /// `a`). Before, `c` stayed cancelled from the first run and the join
        /// failed with `after` skipped: watch said what a fresh run would not.
        @Test func aMemberTheQuorumDidNotNeedBeforeRunsWhenTheKeptResultsFallShort() throws {
            let sandbox = try RunSandbox()
            let live = try Self.start(sandbox)
            try Self.firstRun(sandbox)
            try FileManager.default.removeItem(atPath: sandbox.file("hold"))
            try Watch.write(sandbox, "a.txt", "fail\n")
            let (second, ended) = try Self.second(sandbox, live)
            #expect(Watch.started(second) == ["a", "c", "after"], "\(second.names("task_started"))")
            #expect(second.statuses["a"] == "failed" && second.statuses["c"] == "succeeded", "\(second.statuses)")
            #expect(Self.join(second)?["status"] as? String == "succeeded", "\(second.events("join_completed"))")
            #expect(second.statuses["after"] == "succeeded", "\(second.statuses)")
            #expect(second.exitCode == 1, "\(second.summary)")
            #expect(ended.stdout.contains("join     quorum succeeded: 2/3 succeeded (2 needed)"), "\(ended.stdout)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
        /// (e) A fan-out the first run's quorum did not need ends `succeeded`
        /// by its members' rules (none failed) with none succeeded. Before, a
        /// rerun of the join counted it as a kept success: `x` edited to fail
        /// was not run, and the join "succeeded" with every member not needed.
        /// Now the fan-out runs again with its join, as in a fresh run: its
        /// members succeed, the join succeeds with them, `x`'s failure is seen (exit 1).
        @Test func aFanOutTheQuorumDidNotNeedIsNotAKeptSuccess() throws {
            let sandbox = try RunSandbox()
            try Watch.write(sandbox, "x.txt", "ok\n")
            try Watch.write(sandbox, "fan.txt", "1\n")
            try Watch.write(sandbox, "hold", "")
            let live = try Watch.watch(sandbox, """
                tasks:
                  x: { sources: [x.txt], run: 'read v < x.txt; echo "x $v"; [ "$v" = ok ]' }
                  after: { needs: [q], run: echo after }
                groups:
                  fan:
                    foreach: [1, 2]
                    task:
                      sources: [fan.txt]
                      run: 'if [ -e hold ]; then sleep 60; fi; sleep 1; echo "fan $FLOWRUN_ITEM"'
                joins:
                  q: { wait: [fan, x], need: 1 }
                """)
            #expect(Watch.waitForRuns(sandbox, 1))
            let first = try #require(Watch.runs(sandbox).first)
            #expect(first.statuses["fan[0]"] == "cancelled" && first.statuses["x"] == "succeeded", "\(first.statuses)")
            try FileManager.default.removeItem(atPath: sandbox.file("hold"))
            try Watch.write(sandbox, "x.txt", "bad\n")
            let (second, _) = try Self.second(sandbox, live)
            #expect(Watch.started(second) == ["x", "fan[0]", "fan[1]", "after"], "\(second.names("task_started"))")
            #expect(second.statuses["x"] == "failed" && second.statuses["fan[0]"] == "succeeded" && second.statuses["fan[1]"] == "succeeded", "\(second.statuses)")
            #expect(Self.join(second)?["status"] as? String == "succeeded", "\(second.events("join_completed"))")
            #expect(second.exitCode == 1, "\(second.summary)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}
