import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEnd {
    /// SPEC §2 `timeout`, §7 "no child or grandchild outlives flowrun":
    /// a timeout stops the task's whole tree — SIGTERM, then SIGKILL after
    /// `kill_grace` — including descendants that left the process group, and
    /// a task is finished only once its tree is gone.
    @Suite struct RunProcessTreeTests {
        /// How the task answers SIGTERM: ignore it (and so do the children
        /// that inherit the disposition), or log a line and carry on.
        enum Stubbornness: String, CaseIterable, CustomTestStringConvertible, Sendable {
            case ignoresTerm, logsTermAndContinues

            var trap: String {
                switch self {
                case .ignoresTerm: "trap '' TERM"
                case .logsTermAndContinues: "trap 'echo TERM >> \"$SANDBOX/trap.log\"' TERM"
                }
            }

            var testDescription: String { rawValue }
        }

        /// The tree: the shell, a background child, a grandchild in its own
        /// session, a double-forked orphan (re-parented to flowrun, the
        /// subreaper), and a double-forked orphan in its own session. Each
        /// writes its pid; the shell then waits until all four have.
        static func stubbornTree(_ stubbornness: Stubbornness) -> String {
            """
            kill_grace: 1s
            max_parallel: 4
            tasks:
              stubborn:
                timeout: 1s
                run: |
                  \(stubbornness.trap)
                  echo $$ > "$SANDBOX/shell.pid"
                  sleep 1000 &
                  echo $! > "$SANDBOX/child.pid"
                  setsid sh -c 'echo $$ > "$SANDBOX/setsid.pid"; exec sleep 1000' &
                  ( sh -c 'echo $$ > "$SANDBOX/orphan.pid"; exec sleep 1000' & )
                  ( setsid sh -c 'echo $$ > "$SANDBOX/orphan-setsid.pid"; exec sleep 1000' & )
                  for f in setsid orphan orphan-setsid; do
                    while [ ! -s "$SANDBOX/$f.pid" ]; do sleep 0.01; done
                  done
                  echo ready > "$SANDBOX/ready"
                  while :; do sleep 0.05; done
            """
        }

        static let treeFiles = ["shell.pid", "child.pid", "setsid.pid", "orphan.pid", "orphan-setsid.pid"]

        @Test(arguments: Stubbornness.allCases)
        func aTaskThatOutlastsSIGTERMIsKilledAfterTheGraceWithItsWholeTree(_ stubbornness: Stubbornness) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.stubbornTree(stubbornness))
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "a timed-out task fails the run\n\(run)")
            #expect(sandbox.exists("ready"), "the tree never came up within the 1 s timeout\n\(run)")

            let record = try sandbox.record()
            #expect(record.status("stubborn") == "timed_out", "\(record.overview)")
            let finished = try #require(record.finished("stubborn"), "\(record.overview)")
            #expect(finished["status"] as? String == "timed_out")
            // timeout 1 s + grace 1 s: SIGKILL at ~2 s, never before.
            let duration = try #require(double(finished["duration"]), "\(finished)")
            #expect(duration >= 1.95 && duration < 3.5, "the task took \(duration) s; expected SIGKILL at timeout + grace ≈ 2 s")
            #expect(double(record.task("stubborn")?["duration"]).map { abs($0 - duration) < 0.01 } == true)
            #expect(run.wallSeconds >= 1.95 && run.wallSeconds < 4, "\(run)")
            #expect(finished["signal"].flatMap(integer) == Int(SIGKILL), "the shell should have died of SIGKILL: \(finished)")

            if stubbornness == .logsTermAndContinues {
                // SIGTERM reached the shell exactly once (the group signal; no duplicate through a pidfd).
                #expect(sandbox.lines("trap.log") == ["TERM"], "trap.log: \(sandbox.read("trap.log") ?? "none")")
            }
            for file in Self.treeFiles {
                let pid = try #require(sandbox.pid(in: file), "the task wrote no \(file)")
                #expect(!ProcessProbe.isAlive(pid), "\(file): process \(pid) (\(ProcessProbe.commandLine(of: pid))) outlived flowrun")
            }
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// A shell that exits at once but leaves `sleep 1000 &` holding its
        /// stdout: the leftover is stopped (it dies of the SIGTERM, long
        /// before the 20 s grace), and the task succeeds with the shell's status.
        @Test func aBackgroundJobLeftBehindIsStoppedAndTheTaskSucceeds() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                kill_grace: 20s
                tasks:
                  leaves:
                    run: |
                      sleep 1000 &
                      echo $! > "$SANDBOX/leftover.pid"
                      echo "shell done"
                  after:
                    needs: leaves
                    run: echo after
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("leaves") == "succeeded", "\(record.overview)")
            #expect(record.stdout("leaves") == "shell done")
            #expect(record.status("after") == "succeeded")
            let pid = try #require(sandbox.pid(in: "leftover.pid"))
            #expect(!ProcessProbe.isAlive(pid), "the leftover sleep \(pid) is still alive")
            #expect(run.wallSeconds < 5, "a leftover that dies of SIGTERM must not wait for the grace\n\(run)")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// The task is reported finished only after its leftover is gone: a
        /// leftover that takes 0.5 s to clean up on SIGTERM writes the time
        /// it exits; `task_finished` comes after that, and its dependent
        /// starts after that.
        @Test func aTaskIsReportedFinishedOnlyAfterItsLeftoverIsGone() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                kill_grace: 10s
                tasks:
                  leaves:
                    run: |
                      sh -c 'trap "sleep 0.5; date +%s.%N > \\"\\$SANDBOX/leftover.exited\\"; exit 0" TERM
                             echo $$ > "$SANDBOX/leftover.pid"
                             while :; do sleep 0.05; done' &
                      while [ ! -s "$SANDBOX/leftover.pid" ]; do sleep 0.01; done
                      echo "shell done"
                  after:
                    needs: leaves
                    run: date +%s.%N > "$SANDBOX/after.started"
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("leaves") == "succeeded", "\(record.overview)")
            let exited = try #require(sandbox.read("leftover.exited").flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) },
                                      "the leftover never ran its TERM trap\n\(record.overview)")
            let afterStarted = try #require(sandbox.read("after.started").flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
            #expect(afterStarted > exited, "the dependent started \(exited - afterStarted) s before the leftover exited")
            let finishedTime = try #require(record.finished("leaves")?["time"] as? String)
            let finishedAt = try #require(Self.epochSeconds(iso8601: finishedTime))
            // Event times have millisecond resolution (truncated).
            #expect(finishedAt + 0.001 >= exited, "task_finished at \(finishedTime) precedes the leftover's exit at \(exited)")
            let duration = try #require(double(record.finished("leaves")?["duration"]))
            #expect(duration >= 0.45 && duration < 3, "the task should last about the leftover's 0.5 s clean-up, took \(duration) s")
            let pid = try #require(sandbox.pid(in: "leftover.pid"))
            #expect(!ProcessProbe.isAlive(pid))
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// The hardest escapee: it leaves the session and clears its
        /// environment (so neither the process group nor the tree marker
        /// finds it) and keeps the task's stdout open. flowrun, its subreaper,
        /// must still finish the task and leave nothing behind.
        @Test(arguments: ["directly", "double-forked"])
        func aDescendantThatLeavesTheSessionAndClearsItsEnvironmentDoesNotHangTheRun(_ how: String) throws {
            let sandbox = try RunSandbox()
            let escape = "setsid env -i /bin/sh -c 'echo $$ > \(sandbox.path)/escapee.pid; exec sleep 1000' &"
            let run = try sandbox.run("""
                kill_grace: 1s
                tasks:
                  escape:
                    run: |
                      \(how == "directly" ? escape : "( \(escape) )")
                      while [ ! -s "$SANDBOX/escapee.pid" ]; do sleep 0.01; done
                      echo "shell done"
                  after: {needs: escape, run: "true"}
                """, timeout: .seconds(12))
            #expect(!run.timedOut, "flowrun hung: the task never finished while the escapee held its stdout\n\(run)")
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.wallSeconds < 8, "\(run)")
            let pid = try #require(sandbox.pid(in: "escapee.pid"))
            #expect(!ProcessProbe.isAlive(pid), "the escapee \(pid) outlived flowrun")
            let record = try sandbox.record()
            #expect(record.statuses == ["escape": "succeeded", "after": "succeeded"], "\(record.overview)")
            #expect(record.stdout("escape") == "shell done")
        }

        /// `2026-11-22T03:18:43.027Z` → seconds since the epoch.
        static func epochSeconds(iso8601 text: String) -> Double? {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.date(from: text)?.timeIntervalSince1970
        }
    }
}
