import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// `flowrun watch` over fan-outs and joins (SPEC §14, issue 36), with
    /// the built binary on real files. Every wait is a handshake on the
    /// record (a run's summary) or on a file a task writes, never a sleep.
    @Suite struct WatchFanOutTests {
        typealias Watch = WatchTests

        /// The members that settled up to date (without running) in `run`.
        static func upToDate(_ run: RunRecordFiles) -> Set<String> {
            Set(run.events("task_finished").filter { $0["reused"] as? String == "up_to_date" }.compactMap { $0["task"] as? String })
        }

        static func counts(_ run: RunRecordFiles) -> [String: Int] {
            (run.summary["counts"] as? [String: Any] ?? [:]).compactMapValues(integer)
        }

        static func members(_ run: RunRecordFiles, _ group: String) -> [String] {
            run.group(group)?["members"] as? [String] ?? []
        }

        /// Run `number` of the watch (from 0), which must have finished.
        static func run(_ sandbox: RunSandbox, _ number: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> RunRecordFiles {
            let runs = Watch.runs(sandbox)
            try #require(runs.count > number, "only \(runs.count) runs", sourceLocation: sourceLocation)
            return runs[number]
        }

        /// The services' processes alive now (`sleep 60`, carrying the sandbox's token).
        static func services(_ sandbox: RunSandbox) -> Set<Int32> {
            Set(sandbox.survivors().filter { ProcessProbe.commandLine(of: $0).hasPrefix("sleep 60") })
        }

        static func mkdir(_ sandbox: RunSandbox, _ folder: String) throws {
            try FileManager.default.createDirectory(atPath: sandbox.file(folder), withIntermediateDirectories: true)
        }

        /// A C-like build: a template over the items compiles each one; `link` needs the group.
        static let compile = """
              compile:
                foreach: [a, b, c]
                task:
                  name: cc-${{ item }}
                  sources: ["src/${{ item }}.c"]
                  generates: ["build/${{ item }}.o"]
                  run: mkdir -p build && cp "src/$FLOWRUN_ITEM.c" "build/$FLOWRUN_ITEM.o"
            """

        @Test func editingOneMembersSourceRunsExactlyThatMemberAndWhatNeedsTheGroup() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            for name in ["a", "b", "c"] { try Watch.write(sandbox, "src/\(name).c", "\(name)\n") }
            try Watch.write(sandbox, "notes.txt", "1\n")
            let live = try Watch.watch(sandbox, """
                tasks:
                  link:
                    needs: [compile]
                    run: cat build/a.o build/b.o build/c.o | tr -d '\\n'
                  notes:
                    sources: [notes.txt]
                    run: echo notes
                groups:
                \(Self.compile)
                """)
            #expect(Watch.waitForRuns(sandbox, 1), "the first run never finished")
            #expect(Watch.started(try Self.run(sandbox, 0)) == ["cc-a", "cc-b", "cc-c", "link", "notes"])

            try Watch.write(sandbox, "src/b.c", "B\n")
            #expect(Watch.waitForRuns(sandbox, 2), "no run after the change")
            let second = try Self.run(sandbox, 1)
            #expect(Watch.started(second) == ["cc-b", "link"], "\(second.names("task_started"))")
            #expect(Self.upToDate(second) == ["cc-a", "cc-c"], "\(second.events("task_finished"))")
            #expect(second.events("run_started").first?["trigger"] as? String == "src/b.c")
            #expect(second.stdout("link") == "aBc")
            #expect(second.events("group_finished").first?["status"] as? String == "succeeded")
            #expect(Self.counts(second) == ["succeeded": 5], "\(second.summary["counts"] ?? "")")
            #expect(Self.members(second, "compile") == ["cc-a", "cc-b", "cc-c"])

            // A change the fan-out does not see: it is kept, counted and listed as it ended.
            try Watch.write(sandbox, "notes.txt", "2\n")
            #expect(Watch.waitForRuns(sandbox, 3))
            let third = try Self.run(sandbox, 2)
            #expect(Watch.started(third) == ["notes"], "\(third.names("task_started"))")
            #expect(Self.counts(third) == ["succeeded": 5], "\(third.summary["counts"] ?? "")")
            #expect(Self.members(third, "compile") == ["cc-a", "cc-b", "cc-c"])
            #expect(integer(third.group("compile")?["rows_left_out"]) == 3 && integer(third.group("compile")?["left_out_restored"]) == 3,
                    "\(third.group("compile") ?? [:])")
            #expect(third.exitCode == 0)
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// Items read from the files there: a new file is a new member, a removed one is gone.
        @Test func aNewSourceFileMakesANewMemberAndARemovedOneDropsIt() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            for name in ["a", "b", "c"] { try Watch.write(sandbox, "src/\(name).c", "\(name)\n") }
            let live = try Watch.watch(sandbox, """
                tasks:
                  list:
                    sources: ["src/*.c"]
                    run: for f in src/*.c; do basename "$f" .c; done
                  link:
                    needs: [compile]
                    run: echo linked
                groups:
                  compile:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      name: cc-${{ item }}
                      sources: ["src/${{ item }}.c"]
                      generates: ["build/${{ item }}.o"]
                      run: mkdir -p build && cp "src/$FLOWRUN_ITEM.c" "build/$FLOWRUN_ITEM.o"
                """)
            #expect(Watch.waitForRuns(sandbox, 1))
            #expect(Self.members(try Self.run(sandbox, 0), "compile") == ["cc-a", "cc-b", "cc-c"])

            try Watch.write(sandbox, "src/d.c", "d\n")
            #expect(Watch.waitForRuns(sandbox, 2), "the new file was not seen")
            let second = try Self.run(sandbox, 1)
            #expect(Watch.started(second) == ["list", "cc-d", "link"], "\(second.names("task_started"))")
            #expect(Self.upToDate(second) == ["cc-a", "cc-b", "cc-c"])
            #expect(Self.members(second, "compile") == ["cc-a", "cc-b", "cc-c", "cc-d"])

            try FileManager.default.removeItem(atPath: sandbox.file("src/b.c"))
            #expect(Watch.waitForRuns(sandbox, 3), "the removal was not seen")
            let third = try Self.run(sandbox, 2)
            #expect(Watch.started(third) == ["list", "link"], "\(third.names("task_started"))")
            #expect(Self.members(third, "compile") == ["cc-a", "cc-c", "cc-d"])
            #expect(Self.counts(third) == ["succeeded": 5], "\(third.summary["counts"] ?? "")")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
        }

        /// Items only the run knows: everything under `src/` is watched, and what the
        /// members generate there (`src/${{ item }}.o`) still never starts a run.
        @Test func whatMembersGenerateNeverStartsARunWhenTheirGlobsAreKnownOnlyAtRunTime() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            for name in ["a", "b"] { try Watch.write(sandbox, "src/\(name).c", "\(name)\n") }
            try Watch.write(sandbox, "marker", "1\n")
            let live = try Watch.watch(sandbox, """
                tasks:
                  list: { sources: ["src/*.c"], run: cd src && ls *.c }
                  mark: { sources: [marker], run: echo mark }
                groups:
                  compile:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      sources: ["src/${{ item }}"]
                      generates: ["src/${{ item }}.o"]
                      run: cp "src/$FLOWRUN_ITEM" "src/$FLOWRUN_ITEM.o"
                """)
            #expect(Watch.waitForRuns(sandbox, 1))
            #expect(sandbox.exists("src/a.c.o") && sandbox.exists("src/b.c.o"))
            // The members' writes came first; had they counted, the next run would be theirs.
            try Watch.write(sandbox, "marker", "2\n")
            #expect(Watch.waitForRuns(sandbox, 2))
            let second = try Self.run(sandbox, 1)
            #expect(Watch.started(second) == ["mark"], "\(second.names("task_started"))")
            // Had they counted, the fan-out would be decided again here (or in a run of their own before).
            #expect(second.events("group_finished").isEmpty && Self.upToDate(second).isEmpty, "\(second.events("task_finished"))")
            try Watch.write(sandbox, "src/b.c", "B\n")
            #expect(Watch.waitForRuns(sandbox, 3))
            let third = try Self.run(sandbox, 2)
            #expect(Watch.started(third) == ["list", "compile[1]"], "\(third.names("task_started"))")
            #expect(Watch.runs(sandbox).count == 3, "a run too many")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
        }

        @Test func aJoinWhoseMemberRunsAgainRunsAgainAndItsReportIsPrintedAgain() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            for name in ["a", "x", "y"] { try Watch.write(sandbox, "src/\(name)", "\(name)1\n") }
            let live = try Watch.watch(sandbox, """
                tasks:
                  a: { sources: [src/a], run: cat src/a }
                  never: { run: 'while [ ! -e "$SANDBOX/never" ]; do sleep 0.05; done' }
                  after: { needs: [quorum], run: echo after }
                groups:
                  checks:
                    foreach: [x, y]
                    task:
                      name: check-${{ item }}
                      sources: ["src/${{ item }}"]
                      run: cat "src/$FLOWRUN_ITEM"
                joins:
                  quorum: { wait: [checks, a, never], need: 2 }
                """)
            #expect(Watch.waitForRuns(sandbox, 1))
            let first = try Self.run(sandbox, 0)
            #expect(first.statuses["never"] == "cancelled", "\(first.statuses)")

            try Watch.write(sandbox, "src/y", "y2\n")
            #expect(Watch.waitForRuns(sandbox, 2))
            let second = try Self.run(sandbox, 1)
            // `never`, not needed in the first run, has no result to keep: it runs again with the join
            // (as in a fresh run; its start may not be written before the quorum cancels it).
            #expect(Watch.started(second).subtracting(["never"]) == ["check-y", "after"], "\(second.names("task_started"))")
            #expect(second.statuses["never"] == "cancelled" && second.finished("never")?["reason"] as? String == "join_settled", "\(second.statuses)")
            #expect(Self.upToDate(second) == ["check-x"])
            let join = second.events("join_completed").first
            #expect(join?["join"] as? String == "quorum" && join?["status"] as? String == "succeeded", "\(second.events("join_completed"))")

            try Watch.write(sandbox, "src/a", "a2\n")
            #expect(Watch.waitForRuns(sandbox, 3))
            let third = try Self.run(sandbox, 2)
            #expect(Watch.started(third).subtracting(["never"]) == ["a", "after"], "\(third.names("task_started"))")
            #expect(third.events("join_completed").count == 1)
            live.signalGroup(SIGINT)
            let ended = live.finish()
            #expect(ended.exitStatus == 130)
            // The join's block, once a run: the members' values as they are now.
            let blocks = ended.stdout.components(separatedBy: "join     quorum succeeded: 2/3 succeeded (2 needed)").count - 1
            #expect(blocks == 3, "\(ended.stdout)")
            #expect(ended.stdout.contains("stdout: y2"), "\(ended.stdout)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aMatrixMemberChangeRunsTheMembersThatReadIt() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            for os in ["linux", "bsd"] { try Watch.write(sandbox, "src/\(os).txt", "\(os)\n") }
            let live = try Watch.watch(sandbox, """
                groups:
                  test:
                    matrix:
                      os: [linux, bsd]
                      py: ["3.11", "3.12"]
                    task:
                      name: t-${{ item.os }}-${{ item.py }}
                      sources: ["src/${{ item.os }}.txt"]
                      run: echo ${{ item.os }} ${{ item.py }}
                """)
            #expect(Watch.waitForRuns(sandbox, 1))
            #expect(Watch.started(try Self.run(sandbox, 0)).count == 4)
            try Watch.write(sandbox, "src/bsd.txt", "bsd2\n")
            #expect(Watch.waitForRuns(sandbox, 2))
            let second = try Self.run(sandbox, 1)
            #expect(Watch.started(second) == ["t-bsd-3.11", "t-bsd-3.12"], "\(second.names("task_started"))")
            #expect(Self.upToDate(second) == ["t-linux-3.11", "t-linux-3.12"])
            #expect(Self.counts(second) == ["succeeded": 4], "\(second.summary["counts"] ?? "")")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
        }

        @Test func aChangeDuringARunCancelsOnlyThatRunningMemberAndTheNextRunStartsItAgain() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            for name in ["slow", "quick"] { try Watch.write(sandbox, "src/\(name).txt", "1\n") }
            let live = try Watch.watch(sandbox, """
                groups:
                  work:
                    foreach: [slow, quick]
                    task:
                      name: w-${{ item }}
                      sources: ["src/${{ item }}.txt"]
                      run: |
                        echo started >> "$SANDBOX/$FLOWRUN_ITEM-starts"
                        if [ "$FLOWRUN_ITEM" = slow ] && [ ! -e "$SANDBOX/released" ]; then
                          trap 'echo stopped >> "$SANDBOX/slow-stopped"; exit 143' TERM
                          sleep 60 & wait
                        fi
                        if [ "$FLOWRUN_ITEM" = quick ]; then while [ ! -e "$SANDBOX/go" ]; do sleep 0.02; done; fi
                """)
            #expect(sandbox.waitFor("slow-starts") && sandbox.waitFor("quick-starts"))
            // The slow member's sources change while both run: only it is stopped.
            try Watch.write(sandbox, "released", "")
            try Watch.write(sandbox, "src/slow.txt", "2\n")
            // w-quick is still running when w-slow is stopped; only then may it end.
            #expect(sandbox.waitFor("slow-stopped", timeout: .seconds(30)), "w-slow was not stopped")
            try Watch.write(sandbox, "go", "")
            #expect(sandbox.waitFor("slow-starts", lines: 2, timeout: .seconds(30)), "w-slow was not started again")
            #expect(Watch.waitForRuns(sandbox, 2))
            let runs = [try Self.run(sandbox, 0), try Self.run(sandbox, 1)]
            #expect(runs[0].statuses == ["w-slow": "cancelled", "w-quick": "succeeded"], "\(runs[0].statuses)")
            #expect(runs[0].finished("w-slow")?["reason"] as? String == "sources_changed")
            #expect(Watch.started(runs[1]) == ["w-slow"], "\(runs[1].names("task_started"))")
            #expect(runs[1].statuses["w-slow"] == "succeeded", "\(runs[1].statuses)")
            #expect(sandbox.lines("quick-starts").count == 1, "w-quick ran once")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// A fan-out of services run again: each of its services is stopped (its tree reaped) and started again, none twice.
        @Test func aMatrixOfServicesRunAgainStopsEachOldServiceBeforeItStartsAgain() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            for number in 1...3 { try Watch.write(sandbox, "src/\(number)", "1\n") }
            let live = try Watch.watch(sandbox, """
                groups:
                  replicas:
                    matrix: { n: [1, 2, 3] }
                    task:
                      name: replica-${{ item.n }}
                      service: true
                      sources: ["src/${{ item.n }}"]
                      run: echo "replica ${{ item.n }} up"; exec sleep 60
                      ready: { line: "up$" }
                tasks:
                  use:
                    needs: [replicas]
                    run: echo all ready
                """)
            #expect(Watch.waitForRuns(sandbox, 1))
            let first = Self.services(sandbox)
            #expect(first.count == 3, "\(sandbox.describeSurvivors())")
            try Watch.write(sandbox, "src/2", "2\n")
            #expect(Watch.waitForRuns(sandbox, 2))
            let second = try Self.run(sandbox, 1)
            #expect(second.names("task_ready").count == 3, "\(second.names("task_ready"))")
            #expect(second.status("use") == "succeeded")
            let again = Self.services(sandbox)
            #expect(again.count == 3 && again.isDisjoint(with: first), "the old services were left: \(sandbox.describeSurvivors())")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// What the fan-out needs changed while its members run: every running member is stopped (their inputs are stale).
        @Test func aChangeToWhatAFanOutNeedsDuringARunStopsEachRunningMember() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            try Watch.write(sandbox, "src/gen", "1\n")
            let live = try Watch.watch(sandbox, """
                tasks:
                  gen: { sources: [src/gen], run: cat src/gen }
                groups:
                  use:
                    needs: [gen]
                    foreach: [p, q]
                    task:
                      run: |
                        echo started >> "$SANDBOX/starts"
                        if [ ! -e "$SANDBOX/released" ]; then sleep 60 & wait; fi
                """)
            #expect(sandbox.waitFor("starts", lines: 2, timeout: .seconds(30)))
            try Watch.write(sandbox, "released", "")
            try Watch.write(sandbox, "src/gen", "2\n")
            #expect(Watch.waitForRuns(sandbox, 2))
            let first = try Self.run(sandbox, 0), second = try Self.run(sandbox, 1)
            #expect(first.statuses["use[0]"] == "cancelled" && first.statuses["use[1]"] == "cancelled", "\(first.statuses)")
            #expect(first.finished("use[0]")?["reason"] as? String == "sources_changed")
            #expect(Watch.started(second) == ["gen", "use[0]", "use[1]"], "\(second.names("task_started"))")
            #expect(second.statuses["use[0]"] == "succeeded" && second.statuses["use[1]"] == "succeeded", "\(second.statuses)")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func ctrlCDuringARunningFanOutLeavesNothingRunning() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            try Watch.write(sandbox, "src/x", "1\n")
            let live = try Watch.watch(sandbox, """
                groups:
                  hold:
                    foreach: { range: [1, 3] }
                    task:
                      sources: ["src/x"]
                      run: echo started >> "$SANDBOX/starts"; sleep 60
                """)
            #expect(sandbox.waitFor("starts", lines: 3, timeout: .seconds(30)))
            live.signalGroup(SIGINT)
            let ended = live.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
            #expect(Watch.runs(sandbox).count == 1)
        }

        /// Issue 36's measure: one edit among 200 members, from close_write to the rerun's start and end.
        @Test func oneEditAmongTwoHundredMembersRunsOnlyItSoon() throws {
            let sandbox = try RunSandbox()
            try Self.mkdir(sandbox, "src")
            for number in 0..<200 { try Watch.write(sandbox, "src/f\(number).c", "\(number)\n") }
            let live = try Watch.watch(sandbox, """
                groups:
                  compile:
                    foreach: { range: [0, 199] }
                    task:
                      name: cc-${{ item }}
                      sources: ["src/f${{ item }}.c"]
                      generates: ["build/f${{ item }}.o"]
                      run: mkdir -p build && cp "src/f$FLOWRUN_ITEM.c" "build/f$FLOWRUN_ITEM.o"
                """)
            #expect(Watch.waitForRuns(sandbox, 1, timeout: .seconds(60)))
            let first = try Self.run(sandbox, 0)
            #expect(Self.counts(first) == ["succeeded": 200], "\(first.summary["counts"] ?? ""): \(first.events("task_finished").filter { $0["status"] as? String != "succeeded" })")
            try Watch.write(sandbox, "src/f117.c", "edited\n")
            let written = Date().timeIntervalSince1970
            #expect(Watch.waitForRuns(sandbox, 2))
            let second = try Self.run(sandbox, 1)
            #expect(Watch.started(second) == ["cc-117"], "\(second.names("task_started")) after \(second.events("run_started").first?["trigger"] ?? "")")
            #expect(Self.upToDate(second).count == 199)
            let start = Watch.startTime(second) - written
            let end = ((second.events("run_finished").first?["time"] as? String).flatMap(Watch.isoSeconds) ?? 0) - written
            #expect(start < 1.5, "the run started \(start)s after close_write")
            print("watch: 200-member fan-out, one edit: rerun started \(String(format: "%.3f", start))s and ended \(String(format: "%.3f", end))s after close_write")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
        }
    }
}
