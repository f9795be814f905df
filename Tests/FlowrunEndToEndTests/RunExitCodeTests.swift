import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEnd {
    /// SPEC §7 exit codes, each produced by a real run: 0 nothing failed
    /// (allowed failures, skips and join-cancelled members do not count),
    /// 1 a failure or timeout, 2 a bad workflow or command line, 124 the
    /// run's `timeout`. 128+N (130, 143, 129) are `RunSignalTests`.
    @Suite struct RunExitCodeTests {
        struct Case: CustomTestStringConvertible, Sendable {
            var name: String
            var workflow: String
            var arguments: [String] = []
            var exitCode: Int32
            /// Expected final statuses (a subset).
            var statuses: [String: String] = [:]
            var testDescription: String { "\(name) → \(exitCode)" }
        }

        static let completedRuns: [Case] = [
            Case(name: "all succeed", workflow: """
                tasks:
                  a: {run: "true"}
                  b: {run: "true", needs: a}
                  nap: {sleep: 100ms}
                """, exitCode: 0, statuses: ["a": "succeeded", "b": "succeeded", "nap": "succeeded"]),
            Case(name: "continue_on_error failure", workflow: """
                tasks:
                  flaky: {run: exit 7, continue_on_error: true}
                  slow: {run: sleep 5, timeout: 200ms, continue_on_error: true}
                  after: {run: "true", needs: [flaky, slow]}
                """, exitCode: 0, statuses: ["flaky": "failed", "slow": "timed_out", "after": "succeeded"]),
            Case(name: "skipped tasks", workflow: """
                tasks:
                  gate: {run: "true", if: "${{ 1 == 2 }}"}
                  below: {run: "true", needs: gate}
                  ok: {run: "true"}
                  on-failure: {run: "true", needs: ok, when: failure}
                """, exitCode: 0, statuses: ["gate": "skipped", "below": "skipped", "ok": "succeeded", "on-failure": "skipped"]),
            Case(name: "members a join cancelled", workflow: """
                tasks:
                  fast: {run: "true"}
                  slow: {run: sleep 30}
                  late: {sleep: 30s}
                  slow2: {run: sleep 30}
                joins:
                  first:
                    wait: [fast, slow, late]
                    need: 1
                  deadline:
                    wait: [slow2]
                    timeout: 300ms
                    on_timeout: continue
                """, exitCode: 0, statuses: ["fast": "succeeded", "slow": "cancelled", "late": "cancelled", "slow2": "cancelled"]),
            Case(name: "a group member a join cancelled", workflow: """
                tasks:
                  fast: {run: "true"}
                groups:
                  g:
                    tasks:
                      slow: {run: sleep 30}
                joins:
                  first: {wait: [fast, g], need: 1}
                """, exitCode: 0, statuses: ["fast": "succeeded", "slow": "cancelled"]),
            // docs/FORMAT.md `when`: "A need counts as succeeded if it … failed with
            // continue_on_error: true" — so `when: failure` does not fire (as in GitHub Actions).
            Case(name: "an allowed failure", workflow: """
                tasks:
                  broken: {run: exit 1, continue_on_error: true}
                  rescue: {run: "true", needs: broken, when: failure}
                """, exitCode: 0, statuses: ["broken": "failed", "rescue": "skipped"]),
            Case(name: "a failure", workflow: """
                tasks:
                  broken: {run: exit 3}
                  fine: {run: "true"}
                  rescue: {run: "true", needs: broken, when: failure}
                """, exitCode: 1, statuses: ["broken": "failed", "fine": "succeeded", "rescue": "succeeded"]),
            Case(name: "a timed-out task", workflow: """
                kill_grace: 1s
                tasks:
                  slow: {run: sleep 30, timeout: 200ms}
                """, exitCode: 1, statuses: ["slow": "timed_out"]),
            Case(name: "a failed finally task", workflow: """
                tasks:
                  fine: {run: "true"}
                finally:
                  cleanup: {run: exit 4}
                """, exitCode: 1, statuses: ["fine": "succeeded", "cleanup": "failed"]),
            Case(name: "a join that cannot be met", workflow: """
                tasks:
                  a: {run: exit 1}
                  b: {run: "true"}
                joins:
                  both: {wait: [a, b], need: all}
                """, exitCode: 1, statuses: ["a": "failed"]),
            Case(name: "a join timed out with on_timeout: fail", workflow: """
                tasks:
                  slow: {run: sleep 30}
                  after: {run: "true", needs: j}
                joins:
                  j: {wait: [slow], timeout: 200ms, on_timeout: fail}
                """, exitCode: 1, statuses: ["slow": "cancelled", "after": "skipped"]),
            Case(name: "an http task that gets no answer", workflow: """
                tasks:
                  ping: {http: {url: "http://127.0.0.1:9/nothing-listens"}}
                """, exitCode: 1, statuses: ["ping": "failed"]),
        ]

        @Test(arguments: completedRuns)
        func aCompletedRunExitsWithTheDocumentedCode(_ example: Case) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(example.workflow, example.arguments)
            run.expectNoCrash()
            #expect(run.exitStatus == example.exitCode, "\(run)")
            let record = try sandbox.record()
            #expect(record.exitCode == Int(example.exitCode), "summary.json exit_code\n\(record.overview)")
            #expect(integer(record.events("run_finished").last?["exit_code"]) == Int(example.exitCode))
            for (task, status) in example.statuses {
                #expect(record.status(task) == status, "\(task): \(record.status(task) ?? "nil"), expected \(status)\n\(record.overview)")
            }
            #expect(run.stdout.contains("exit \(example.exitCode)"), "the summary line names the exit code\n\(run)")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// 2: the workflow or the command line is wrong; nothing runs and no
        /// run record is written.
        @Test(arguments: [
            ("an invalid workflow", "tasks:\n  a: {run: \"touch $SANDBOX/ran\", tiemout: 5s}\n", [String]()),
            ("an undeclared --var", "vars: {x: 1}\ntasks:\n  a: {run: \"touch $SANDBOX/ran\"}\n", ["--var", "y=2"]),
            ("a --var without =", "vars: {x: 1}\ntasks:\n  a: {run: \"touch $SANDBOX/ran\"}\n", ["--var", "x"]),
            ("--max-parallel 0", "tasks:\n  a: {run: \"touch $SANDBOX/ran\"}\n", ["--max-parallel", "0"]),
            ("an unknown --only", "tasks:\n  a: {run: \"touch $SANDBOX/ran\"}\n", ["--only", "nope"]),
            ("an unknown option", "tasks:\n  a: {run: \"touch $SANDBOX/ran\"}\n", ["--frobnicate"]),
            ("a cycle", "tasks:\n  a: {run: \"touch $SANDBOX/ran\", needs: b}\n  b: {run: \"true\", needs: a}\n", [String]()),
        ])
        func aBadWorkflowOrCommandLineExitsTwoAndRunsNothing(_ name: String, _ workflow: String, _ extra: [String]) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(workflow, extra)
            run.expectNoCrash()
            #expect(run.exitStatus == 2, "\(name)\n\(run)")
            #expect(!run.stderr.isEmpty, "\(name): no message on stderr\n\(run)")
            #expect(!sandbox.exists("ran"), "\(name): a task ran")
            let runs = (try? FileManager.default.contentsOfDirectory(atPath: sandbox.logDirectory)) ?? []
            #expect(runs.isEmpty, "\(name): a run record was written: \(runs)")
        }

        @Test func aMissingWorkflowFileExitsTwo() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run([sandbox.file("absent.yaml"), "--log-dir", sandbox.logDirectory], in: sandbox.path)
            run.expectNoCrash()
            #expect(run.exitStatus == 2, "\(run)")
        }

        /// 124: the run's `timeout` fires: the long task is stopped (and
        /// ends `cancelled`, `reason: run_timeout`), what has not started is
        /// cancelled, `finally` still runs — with its own budget.
        @Test func theRunTimeoutExits124AndFinallyStillRuns() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                timeout: 1s
                kill_grace: 1s
                tasks:
                  long:
                    run: |
                      echo $$ > "$SANDBOX/long.pid"
                      sleep 30
                  next: {run: "touch $SANDBOX/next.ran", needs: long}
                finally:
                  cleanup:
                    run: |
                      sleep 1.2
                      echo ${{ tasks.long.status }} > "$SANDBOX/finally.marker"
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 124, "\(run)")
            // 1 s for the deadline, then finally's 1.2 s (longer than the run's whole timeout).
            #expect(run.wallSeconds > 2.1 && run.wallSeconds < 5, "\(run)")
            #expect(sandbox.read("finally.marker") == "cancelled\n", "finally did not run to the end (its budget is not the run's)")
            #expect(!sandbox.exists("next.ran"))
            let record = try sandbox.record()
            #expect(record.exitCode == 124)
            #expect(record.summary["stopped_by"] as? String == "run_timeout", "\(record.summary["stopped_by"] ?? "nil")")
            #expect(record.status("long") == "cancelled", "\(record.statuses)")
            #expect(record.task("long")?["reason"] as? String == "run_timeout")
            #expect(["cancelled", "skipped"].contains(record.status("next") ?? ""), "\(record.statuses)")
            #expect(record.status("cleanup") == "succeeded")
            let long = try #require(double(record.finished("long")?["duration"]))
            #expect(long >= 0.95 && long < 2, "the long task was stopped after \(long) s, the run's timeout is 1 s")
            let pid = try #require(sandbox.pid(in: "long.pid"))
            #expect(!ProcessProbe.isAlive(pid))
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// SPEC §6: `finally` has its own budget, "not taken from the run's
        /// deadline": a run whose main phase ends in time is not cut short
        /// while `finally` outlasts the run's `timeout`.
        @Test func finallyIsNotCutShortByTheRunTimeout() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                timeout: 1s
                tasks:
                  quick: {run: "true"}
                finally:
                  long-cleanup: {run: "sleep 1.5; touch $SANDBOX/cleanup.done"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.exists("cleanup.done"))
            let record = try sandbox.record()
            #expect(record.status("long-cleanup") == "succeeded", "\(record.statuses)")
        }

        /// A finally task's own `timeout` stops it (exit 1, the run's 124 wins when both fire).
        @Test func aFinallyTaskHasItsOwnTimeout() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                kill_grace: 1s
                tasks:
                  fine: {run: "true"}
                finally:
                  stuck: {run: sleep 30, timeout: 300ms}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            #expect(run.wallSeconds < 3, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("stuck") == "timed_out")
        }
    }
}
