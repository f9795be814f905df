import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// SPEC §9 `flowrun resume`: a failed or interrupted run continues in a
    /// new record that links the old one; what succeeded is restored, not
    /// run; a workflow changed under a task it would restore is refused.
    @Suite struct ResumeTests {
        /// Four tasks in a chain plus a side branch; `third` fails on its
        /// first attempt ever (a marker file), and every task counts its runs.
        static let chain = """
            tasks:
              first:
                run: |
                  echo ran >> "$SANDBOX/first.count"
                  echo "first-$(date +%s%N)"
              second:
                needs: [first]
                run: echo ran >> "$SANDBOX/second.count"
              side:
                needs: [first]
                run: echo ran >> "$SANDBOX/side.count"
              third:
                needs: [second]
                run: |
                  echo ran >> "$SANDBOX/third.count"
                  if [ ! -f "$SANDBOX/marker" ]; then touch "$SANDBOX/marker"; echo failing once; exit 3; fi
              fourth:
                needs: [third]
                run: |
                  echo ran >> "$SANDBOX/fourth.count"
                  echo saw ${{ tasks.first.stdout }}

            """

        /// The run folders under `--log-dir`, oldest first.
        static func records(_ sandbox: RunSandbox) throws -> [RunRecordFiles] {
            let runs = ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.logDirectory)) ?? []).filter(isRunID)
            // By the time each started.
            return try runs.map { try RunRecordFiles(directory: sandbox.logDirectory + "/" + $0) }.sorted { first, second in
                (first.events("run_started").first?["time"] as? String ?? "") < (second.events("run_started").first?["time"] as? String ?? "")
            }
        }

        func resume(_ sandbox: RunSandbox, _ extra: [String] = []) throws -> FlowrunRun {
            try FlowrunBinary.run(["resume", "--log-dir", sandbox.logDirectory, "--output", "plain"] + extra, in: sandbox.path, environment: sandbox.environment)
        }

        @Test func resumeRunsOnlyTheFailedTaskAndWhatFollowsAndRestoresTheRest() throws {
            let sandbox = try RunSandbox()
            let failed = try sandbox.run(Self.chain)
            #expect(failed.exitStatus == 1, "\(failed)")
            let old = try #require(try Self.records(sandbox).first)
            #expect(old.status("third") == "failed" && old.status("fourth") == "skipped", "\(old.overview)")

            let resumed = try resume(sandbox)
            #expect(resumed.exitStatus == 0, "\(resumed)")
            let records = try Self.records(sandbox)
            try #require(records.count == 2, "expected a new record next to the old one")
            let new = records[1]
            // Only the failed task and its dependents ran again.
            #expect(sandbox.lines("first.count").count == 1)
            #expect(sandbox.lines("second.count").count == 1)
            #expect(sandbox.lines("side.count").count == 1)
            #expect(sandbox.lines("third.count").count == 2)
            #expect(sandbox.lines("fourth.count").count == 1)
            #expect(new.names("task_started").sorted() == ["fourth", "third"], "\(new.overview)")
            for name in ["first", "second", "side"] {
                #expect(new.finished(name)?["reused"] as? String == "restored", "\(new.overview)")
                #expect(new.status(name) == "succeeded")
                #expect(new.task(name)?["reused"] as? String == "restored")
            }
            // The downstream task saw the first task's output from the old run, unchanged.
            let firstOutput = try #require(old.stdout("first"))
            #expect(firstOutput.hasPrefix("first-"))
            #expect(new.stdout("first") == firstOutput)
            #expect(new.stdout("fourth") == "saw \(firstOutput)", "\(new.overview)")
            // The new record links the old one.
            #expect(new.summary["resumed_from"] as? String == old.runID)
            #expect(new.events("run_started").first?["resumed_from"] as? String == old.runID)
            #expect(resumed.stdout.contains("restored first"), "\(resumed)")
            // Its events, `reused` and `resumed_from` included, match the documented schema.
            let problems = try RunEndToEndParallel.EventsSchemaTests.validate(new.eventLines.filter { !$0.isEmpty })
            #expect(problems.isEmpty, "\(problems)")
        }

        @Test func resumeRefusesNamingATaskItWouldRestoreThatChanged() throws {
            let sandbox = try RunSandbox()
            let failed = try sandbox.run(Self.chain)
            #expect(failed.exitStatus == 1, "\(failed)")
            try sandbox.write(workflow: Self.chain.replacingOccurrences(of: "echo \"first-", with: "echo \"FIRST-"))
            let refused = try resume(sandbox)
            #expect(refused.exitStatus == 2, "\(refused)")
            #expect(refused.stderr.contains("cannot resume"), "\(refused)")
            #expect(refused.stderr.contains("  first: its run script changed"), "\(refused)")
            #expect(try Self.records(sandbox).count == 1, "a refused resume made a record")
            #expect(sandbox.lines("third.count").count == 1, "a refused resume ran something")
        }

        @Test func resumeOfARunThatSucceededRunsNothingAndFromRunsATaskAndItsDependentsAgain() throws {
            let sandbox = try RunSandbox()
            try "".write(toFile: sandbox.file("marker"), atomically: true, encoding: .utf8)
            let succeeded = try sandbox.run(Self.chain)
            #expect(succeeded.exitStatus == 0, "\(succeeded)")
            let nothing = try resume(sandbox)
            #expect(nothing.exitStatus == 0, "\(nothing)")
            #expect(nothing.stdout.contains("succeeded: nothing to resume"), "\(nothing)")
            #expect(try Self.records(sandbox).count == 1)

            let from = try resume(sandbox, ["--from", "second"])
            #expect(from.exitStatus == 0, "\(from)")
            let new = try #require(try Self.records(sandbox).last)
            #expect(new.names("task_started").sorted() == ["fourth", "second", "third"], "\(new.overview)")
            #expect(new.finished("first")?["reused"] as? String == "restored")
            #expect(new.finished("side")?["reused"] as? String == "restored")
            #expect(sandbox.lines("first.count").count == 1)

            let unknown = try resume(sandbox, ["--from", "secnd"])
            #expect(unknown.exitStatus == 2, "\(unknown)")
            #expect(unknown.stderr.contains("--from secnd: no task, group, join or fan-out member of the run has that name (did you mean 'second'?)"), "\(unknown)")
        }

        /// `--from` a matrix member: that member runs again, its group's
        /// other members are restored, and what follows the group runs
        /// again. Before, `--from` named only tasks, groups and joins.
        @Test func fromAMatrixMemberRunsThatMemberAndWhatFollowsTheGroup() throws {
            let sandbox = try RunSandbox()
            let workflow = """
                groups:
                  test:
                    matrix: { os: [linux, mac] }
                    task:
                      run: echo ran >> "$SANDBOX"/${{ item.os }}.count
                tasks:
                  after: { needs: [test], run: 'echo ran >> "$SANDBOX/after.count"' }

                """
            #expect(try sandbox.run(workflow).exitStatus == 0)
            let from = try resume(sandbox, ["--from", "test[os=linux]"])
            #expect(from.exitStatus == 0, "\(from)")
            let new = try #require(try Self.records(sandbox).last)
            #expect(new.names("task_started").sorted() == ["after", "test[os=linux]"], "\(new.overview)")
            #expect(new.finished("test[os=mac]")?["reused"] as? String == "restored", "\(new.overview)")
            #expect(sandbox.lines("linux.count").count == 2 && sandbox.lines("mac.count").count == 1)
            #expect(sandbox.lines("after.count").count == 2)
        }

        /// SIGINT while a fan-out over a run-time list runs: members that
        /// succeeded are restored, the interrupted one and those never started run.
        @Test func anInterruptedFanOutResumesOnlyTheMembersThatDidNotSucceed() throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                groups:
                  batch:
                    needs: [items]
                    concurrency: 1
                    foreach: ${{ tasks.items.stdout }}
                    task:
                      run: |
                        echo ran >> "$SANDBOX/$FLOWRUN_ITEM.count"
                        if [ "$FLOWRUN_ITEM" = c ] && [ ! -f "$SANDBOX/resumed" ]; then
                          trap 'exit 143' TERM
                          echo ready > "$SANDBOX/c.ready"
                          while :; do sleep 0.05; done
                        fi
                        echo done-$FLOWRUN_ITEM
                tasks:
                  items:
                    run: printf 'a\\nb\\nc\\nd\\ne\\n'
                  after:
                    needs: [batch]
                    run: echo ran >> "$SANDBOX/after.count"

                """)
            try #require(sandbox.waitFor("c.ready"), "member c never started")
            flowrun.signalGroup(SIGINT)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            let old = try #require(try Self.records(sandbox).first)
            #expect(old.status("batch[0]") == "succeeded" && old.status("batch[1]") == "succeeded", "\(old.overview)")
            #expect(old.status("batch[3]") == "cancelled", "\(old.overview)")

            try "".write(toFile: sandbox.file("resumed"), atomically: true, encoding: .utf8)
            let resumed = try resume(sandbox)
            #expect(resumed.exitStatus == 0, "\(resumed)")
            let new = try #require(try Self.records(sandbox).last)
            #expect(new.names("task_started").sorted() == ["after", "batch[2]", "batch[3]", "batch[4]"], "\(new.overview)")
            #expect(new.finished("batch[0]")?["reused"] as? String == "restored")
            #expect(new.stdout("batch[1]") == "done-b")
            #expect(sandbox.lines("a.count").count == 1 && sandbox.lines("b.count").count == 1)
            #expect(sandbox.lines("c.count").count == 2 && sandbox.lines("d.count").count == 1)
            let results = try #require(new.summary["groups"] as? [[String: Any]])
            #expect(results.first?["status"] as? String == "succeeded")
        }

        /// A task with sources is checked, not restored: a file fixed after
        /// the failure is built again, and what follows sees the new result.
        @Test func aTaskWithSourcesIsCheckedNotRestoredOnResume() throws {
            let sandbox = try RunSandbox()
            try "one".write(toFile: sandbox.file("in.txt"), atomically: true, encoding: .utf8)
            let failed = try sandbox.run("""
                tasks:
                  make:
                    sources: [in.txt]
                    generates: [out.txt]
                    run: cp in.txt out.txt
                  use:
                    needs: [make]
                    run: |
                      test -f "$SANDBOX/allow" || exit 1
                      cat out.txt

                """)
            #expect(failed.exitStatus == 1, "\(failed)")
            try "two".write(toFile: sandbox.file("in.txt"), atomically: true, encoding: .utf8)
            try "".write(toFile: sandbox.file("allow"), atomically: true, encoding: .utf8)
            let resumed = try resume(sandbox)
            #expect(resumed.exitStatus == 0, "\(resumed)")
            let new = try #require(try Self.records(sandbox).last)
            #expect(new.names("task_started").sorted() == ["make", "use"], "\(new.overview)")
            #expect(new.stdout("use") == "two", "\(new.overview)")
        }

        /// A stdout past 1 MiB is restored whole (from the old record's file),
        /// not as the end the summary keeps: a fan-out over it has every item.
        @Test func aRestoredStdoutPastOneMiBFeedsAFanOutWhole() throws {
            let sandbox = try RunSandbox()
            let failed = try sandbox.run("""
                tasks:
                  big:
                    run: |
                      line=$(printf '%0600d' 0)
                      i=0
                      while [ $i -lt 2000 ]; do echo "$i-$line"; i=$((i + 1)); done
                  check:
                    needs: [each]
                    run: test -f "$SANDBOX/allow"
                groups:
                  each:
                    needs: [big]
                    foreach: ${{ tasks.big.stdout }}
                    task: { sleep: 0s }

                """, timeout: .seconds(60))
            #expect(failed.exitStatus == 1, "\(failed)")
            try "".write(toFile: sandbox.file("allow"), atomically: true, encoding: .utf8)
            let resumed = try FlowrunBinary.run(
                ["resume", "--log-dir", sandbox.logDirectory, "--output", "json"], in: sandbox.path, environment: sandbox.environment, timeout: .seconds(60))
            #expect(resumed.exitStatus == 0, "\(resumed.stderr)")
            let new = try #require(try Self.records(sandbox).last)
            #expect(new.finished("big")?["reused"] as? String == "restored")
            let group = try #require((new.summary["groups"] as? [[String: Any]])?.first)
            #expect((group["members"] as? [Any])?.count == 2000, "a restored stdout past 1 MiB was cut")
            #expect(new.names("task_started") == ["check"])
        }

        @Test func anAmbiguousOrUnknownRunIsAnErrorNamingTheCandidatesAndNoRunMeansTheLatest() throws {
            let sandbox = try RunSandbox()
            _ = try sandbox.run(Self.chain)
            _ = try sandbox.run(Self.chain)
            let runs = try Self.records(sandbox).map(\.runID)
            let common = String(zip(runs[0], runs[1]).prefix { $0 == $1 }.map(\.0))
            let ambiguous = try resume(sandbox, [common])
            #expect(ambiguous.exitStatus == 2, "\(ambiguous)")
            #expect(ambiguous.stderr.contains("matches 2 runs"), "\(ambiguous)")
            #expect(ambiguous.stderr.contains(runs[0]) && ambiguous.stderr.contains(runs[1]), "\(ambiguous)")
            let unknown = try resume(sandbox, ["19990101"])
            #expect(unknown.exitStatus == 2 && unknown.stderr.contains("starts with '19990101'"), "\(unknown)")
            // No RUN: the run `latest` points at, else the one that started last.
            let latestByTime = try resume(sandbox, ["--dry-run"])
            #expect(latestByTime.stdout.hasPrefix("run \(runs[1]) (workflow) succeeded: nothing to resume"), "\(latestByTime)")
            // Every run points `latest` at itself; point it back at the first.
            try? FileManager.default.removeItem(atPath: sandbox.logDirectory + "/latest")
            try FileManager.default.createSymbolicLink(atPath: sandbox.logDirectory + "/latest", withDestinationPath: runs[0])
            let latestByLink = try resume(sandbox, ["--dry-run"])
            #expect(latestByLink.stdout.hasPrefix("resume \(runs[0]):"), "\(latestByLink)")
        }
    }
}
