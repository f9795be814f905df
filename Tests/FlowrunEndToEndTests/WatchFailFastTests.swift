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
    }
}
