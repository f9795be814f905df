import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// `flowrun watch` over a fan-out whose items only the run knows: what
    /// it watches is more than its globs can match, but only a path its globs
    /// could match starts a run. The built binary on real files.
    @Suite struct WatchRunTimeGlobTests {
        typealias Watch = WatchTests

        static func trigger(_ run: RunRecordFiles) -> String? {
            run.events("run_started").first?["trigger"] as? String
        }

        /// `sources: ["${{ item }}.c"]` watches the whole folder; a dependent that
        /// writes `report.txt` there (no `generates:`) must not start a run — it
        /// would run the fan-out and the dependent again, without end. The next
        /// run is the one a `.c` file starts.
        @Test func aFileNoRunTimeGlobCanMatchStartsNoRunAndNoLoop() throws {
            let sandbox = try RunSandbox()
            for name in ["a", "b"] { try Watch.write(sandbox, "\(name).c", "\(name)\n") }
            let live = try Watch.watch(sandbox, """
                tasks:
                  list:
                    sources: ["*.c"]
                    run: for f in *.c; do echo "${f%.c}"; done
                  report:
                    needs: [cc]
                    run: date +%s%N > report.txt
                groups:
                  cc:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      name: cc-${{ item }}
                      sources: ["${{ item }}.c"]
                      run: cat "$FLOWRUN_ITEM.c"
                """)
            #expect(Watch.waitForRuns(sandbox, 1), "the first run never finished")
            try Watch.write(sandbox, "b.c", "B\n")
            #expect(Watch.waitForRuns(sandbox, 2), "no run after the change")
            let runs = Watch.runs(sandbox)
            #expect(runs.count >= 2 && Self.trigger(runs[1]) == "b.c", "\(runs.dropFirst().map { Self.trigger($0) ?? "?" })")
            try Watch.write(sandbox, "a.c", "A\n")
            #expect(Watch.waitForRuns(sandbox, 3), "no run after the second change")
            let after = Watch.runs(sandbox)
            #expect(after.count >= 3 && Self.trigger(after[2]) == "a.c", "\(after.dropFirst().map { Self.trigger($0) ?? "?" })")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}
