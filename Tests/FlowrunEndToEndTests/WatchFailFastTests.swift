import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// `flowrun watch` of a workflow with `fail_fast: true` (SPEC §14): a
    /// failure stops that run, not the watch, which runs until Ctrl-C.
    @Suite struct WatchFailFastTests {
        typealias Watch = WatchTests

        /// Before, the run `fail_fast` stopped ended the watch itself, exit 1
        /// and no word of it: the next save ran nothing. Now the watch goes
        /// on: the fixed file's run comes, and Ctrl-C ends it with 130.
        @Test func aFailFastRunEndsThatRunNotTheWatch() throws {
            let sandbox = try RunSandbox()
            try Watch.write(sandbox, "a.txt", "ok\n")
            let live = try Watch.watch(sandbox, """
                fail_fast: true
                tasks:
                  a: { sources: [a.txt], run: 'read v < a.txt; echo "a $v"; [ "$v" != bad ]' }
                  b: { needs: [a], run: echo b }
                """)
            #expect(Watch.waitForRuns(sandbox, 1))
            try Watch.write(sandbox, "a.txt", "bad\n")
            #expect(Watch.waitForRuns(sandbox, 2))
            try Watch.write(sandbox, "a.txt", "fixed\n")
            #expect(Watch.waitForRuns(sandbox, 3), "no run after the fail_fast run: the watch had ended")
            live.signalGroup(SIGINT)
            let ended = live.finish()
            let runs = Watch.runs(sandbox)
            #expect(runs.count == 3, "\(ended)")
            if runs.count == 3 {
                #expect(runs[1].statuses["a"] == "failed" && runs[1].exitCode == 1, "\(runs[1].statuses)")
                #expect(runs[2].stdout("a") == "a fixed" && runs[2].statuses["b"] == "succeeded", "\(runs[2].statuses)")
            }
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    

        /// The workflow's `timeout:` bounds every run of the watch, not only
        /// the first: before, its timer ended with the first run and a later
        /// run that hung ran on for ever. The run ends 124 (its task cancelled
        /// by the run's timeout, as in a plain run); the watch
        /// goes on.
        @Test func theRunsTimeoutBoundsEveryRunOfTheWatch() throws {
            let sandbox = try RunSandbox()
            try Watch.write(sandbox, "a.txt", "ok\n")
            let live = try Watch.watch(sandbox, """
                timeout: 2s
                tasks:
                  a: { sources: [a.txt], run: 'read v < a.txt; echo "a $v"; [ "$v" != slow ] || sleep 60' }
                """)
            #expect(Watch.waitForRuns(sandbox, 1))
            try Watch.write(sandbox, "a.txt", "slow\n")
            #expect(Watch.waitForRuns(sandbox, 2, timeout: .seconds(40)), "the second run was not stopped by the run's 2 s timeout")
            try Watch.write(sandbox, "a.txt", "fast\n")
            #expect(Watch.waitForRuns(sandbox, 3), "no run after the timed-out one: the watch had ended")
            live.signalGroup(SIGINT)
            let ended = live.finish()
            let runs = Watch.runs(sandbox)
            #expect(runs.count == 3, "\(ended)")
            if runs.count == 3 {
                #expect(runs[1].statuses["a"] == "cancelled" && runs[1].exitCode == 124, "\(runs[1].statuses)")
                #expect(runs[1].events("run_started").first?["timeout_seconds"] as? Double == 2, "\(runs[1].events("run_started"))")
                #expect(runs[2].stdout("a") == "a fast" && runs[2].exitCode == 0, "\(runs[2].statuses)")
            }
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}
