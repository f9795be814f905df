import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEnd {
    /// SPEC §2 task keys and §7 options, run for real: needs, `when`, `if`,
    /// skip propagation, retries with backoff, fail-fast, `max_parallel` and
    /// the other limits, `--only`, `--var`, `--max-parallel`.
    @Suite struct RunSchedulingTests {
        // MARK: needs, when, if

        @Test func needsOrderTasksGroupsAndJoins() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                max_parallel: 8
                tasks:
                  a: {run: "sleep 0.2; echo a >> $SANDBOX/order"}
                  b: {run: "echo b >> $SANDBOX/order", needs: a}
                  c: {run: "sleep 0.1; echo c >> $SANDBOX/order", needs: a}
                  d: {run: "echo d >> $SANDBOX/order", needs: [b, c]}
                  after-group: {run: "echo after-group >> $SANDBOX/order", needs: g}
                  after-join: {run: "echo after-join >> $SANDBOX/order", needs: j}
                groups:
                  g:
                    needs: d
                    tasks:
                      g1: {run: "sleep 0.2; echo g1 >> $SANDBOX/order"}
                      g2: {run: "echo g2 >> $SANDBOX/order"}
                joins:
                  j: {wait: [g1, g2], need: all}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let order = sandbox.lines("order")
            #expect(order.count == 8, "\(order)")
            #expect(order.first == "a")
            #expect(Set(order[1...2]) == ["b", "c"], "\(order)")
            #expect(order[3] == "d", "\(order)")
            #expect(Set(order[4...5]) == ["g1", "g2"], "\(order)")
            #expect(Set(order[6...7]) == ["after-group", "after-join"], "\(order)")

            // The same from the events: nothing starts before each of its needs finished.
            let record = try sandbox.record()
            let needs: [String: [String]] = [
                "b": ["a"], "c": ["a"], "d": ["b", "c"], "g1": ["d"], "g2": ["d"],
                "after-group": ["g1", "g2"], "after-join": ["g1", "g2"],
            ]
            for (task, required) in needs {
                let started = try #require(Self.position(of: "task_started", task, in: record), "\(task) never started")
                for need in required {
                    let finished = try #require(Self.position(of: "task_finished", need, in: record))
                    #expect(finished < started, "\(task) started before its need \(need) finished\n\(record.overview)")
                }
            }
        }

        @Test func whenIfAndSkipPropagation() throws {
            let workflow = """
                vars: {flag: "no"}
                tasks:
                  bad: {run: exit 3}
                  good: {run: "true"}
                  on-failure: {needs: bad, when: failure, run: "touch $SANDBOX/on-failure.ran"}
                  on-failure-of-good: {needs: good, when: failure, run: "touch $SANDBOX/on-failure-of-good.ran"}
                  always-after-bad: {needs: bad, when: always, run: "touch $SANDBOX/always-after-bad.ran"}
                  after-bad: {needs: bad, run: "touch $SANDBOX/after-bad.ran"}
                  after-after-bad: {needs: after-bad, run: "touch $SANDBOX/after-after-bad.ran"}
                  always-at-end: {needs: after-after-bad, when: always, run: "touch $SANDBOX/always-at-end.ran"}
                  gated: {needs: good, if: "${{ vars.flag == 'yes' }}", run: "touch $SANDBOX/gated.ran"}
                  below-gated: {needs: gated, run: "touch $SANDBOX/below-gated.ran"}
                  reads-status:
                    needs: [bad, gated]
                    when: always
                    run: echo ${{ tasks.bad.status }} ${{ tasks.bad.exit_code }} ${{ tasks.gated.status }} > "$SANDBOX/statuses"
                """
            let expected: [String: String] = [
                "bad": "failed", "good": "succeeded", "on-failure": "succeeded", "on-failure-of-good": "skipped",
                "always-after-bad": "succeeded", "after-bad": "skipped", "after-after-bad": "skipped",
                "always-at-end": "succeeded", "reads-status": "succeeded",
            ]
            for flag in ["no", "yes"] {
                let sandbox = try RunSandbox()
                let run = try sandbox.run(workflow, flag == "yes" ? ["--var", "flag=yes"] : [])
                run.expectNoCrash()
                #expect(run.exitStatus == 1, "a failure is a failure whatever handled it\n\(run)")
                let record = try sandbox.record()
                var wanted = expected
                wanted["gated"] = flag == "yes" ? "succeeded" : "skipped"
                wanted["below-gated"] = wanted["gated"]
                for (task, status) in wanted {
                    #expect(record.status(task) == status, "flag=\(flag): \(task) is \(record.status(task) ?? "nil"), expected \(status)")
                    let ran = sandbox.exists("\(task).ran")
                    if task != "bad" && task != "good" && task != "reads-status" {
                        #expect(ran == (status == "succeeded"), "flag=\(flag): \(task) ran: \(ran)")
                    }
                    if status == "skipped" {
                        #expect(record.events("task_started", task: task).isEmpty, "\(task) was skipped but has a task_started event")
                    }
                }
                #expect(sandbox.read("statuses") == "failed 3 \(wanted["gated"]!)\n")
            }
        }

        // MARK: retries

        /// Attempts are counted by FLOWRUN_ATTEMPT; the wait before retry k
        /// is retry_delay × backoff^(k-1), measured between attempts (a
        /// timer is never early; the tolerance allows for a loaded machine).
        @Test func retriesWaitWithBackoffAndCountAttempts() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                kill_grace: 1s
                max_parallel: 4
                tasks:
                  flaky:
                    retries: 3
                    retry_delay: 300ms
                    backoff: 2
                    run: |
                      echo "$FLOWRUN_ATTEMPT $(date +%s.%N)" >> "$SANDBOX/flaky"
                      echo "attempt=$FLOWRUN_ATTEMPT" >> "$FLOWRUN_OUTPUT"
                      echo "attempt $FLOWRUN_ATTEMPT"
                      [ "$FLOWRUN_ATTEMPT" -ge 3 ]
                  hopeless:
                    retries: 1
                    retry_delay: 100ms
                    run: echo "$FLOWRUN_ATTEMPT" >> "$SANDBOX/hopeless"; exit 5
                  slowpoke:
                    retries: 1
                    retry_delay: 100ms
                    timeout: 200ms
                    run: echo "$FLOWRUN_ATTEMPT" >> "$SANDBOX/slowpoke"; exec sleep 30
                  after-flaky:
                    needs: flaky
                    run: echo ${{ tasks.flaky.outputs.attempt }} > "$SANDBOX/after-flaky"
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()

            let attempts = sandbox.lines("flaky").map { $0.split(separator: " ") }
            #expect(attempts.map { $0.first.map(String.init) } == ["1", "2", "3"], "\(attempts)")
            let times = attempts.compactMap { $0.last.flatMap { Double($0) } }
            try #require(times.count == 3)
            let gaps = [times[1] - times[0], times[2] - times[1]]
            print(String(format: "run-retries: gaps %.3f s (delay 0.3) and %.3f s (delay 0.6)", gaps[0], gaps[1]))
            #expect(gaps[0] >= 0.3 && gaps[0] < 0.3 + 0.4, "first retry after \(gaps[0]) s, expected 0.3 s")
            #expect(gaps[1] >= 0.6 && gaps[1] < 0.6 + 0.4, "second retry after \(gaps[1]) s, expected 0.6 s (backoff 2)")
            #expect(record.status("flaky") == "succeeded")
            #expect(integer(record.task("flaky")?["attempts"]) == 3)
            #expect(record.outputs("flaky") == ["attempt": "3"], "the stash comes from the last attempt")
            #expect(record.stdout("flaky") == "attempt 3")
            #expect(sandbox.read("after-flaky") == "3\n")
            let retrying = record.events("task_retrying", task: "flaky")
            #expect(retrying.compactMap { integer($0["attempt"]) } == [2, 3], "\(retrying)")
            #expect(retrying.compactMap { double($0["delay"]) } == [0.3, 0.6], "\(retrying)")
            for attempt in 1...3 {
                #expect(FileManager.default.fileExists(atPath: record.outputsPath("flaky", attempt: attempt)), "no outputs/NNNNNN-flaky.\(attempt)")
            }
            // Every attempt's output is in the one log.
            let log = record.logText("flaky") ?? ""
            #expect(log.contains("attempt 1\n") && log.contains("attempt 2\n") && log.contains("attempt 3\n"), "\(log)")

            #expect(sandbox.lines("hopeless") == ["1", "2"])
            #expect(record.status("hopeless") == "failed")
            #expect(integer(record.task("hopeless")?["attempts"]) == 2)
            #expect(integer(record.task("hopeless")?["exit_code"]) == 5)
            #expect(sandbox.lines("slowpoke") == ["1", "2"], "a timed-out attempt is retried")
            #expect(record.status("slowpoke") == "timed_out")
            #expect(record.events("task_retrying", task: "slowpoke").first?["status"] as? String == "timed_out")
        }

        // MARK: fail_fast

        enum FailFastSource: String, CaseIterable, Sendable { case workflowKey, commandLineFlag }

        /// The first failure cancels the running task (SIGTERM once) and what
        /// has not started; `finally` still runs.
        @Test(arguments: FailFastSource.allCases)
        func failFastCancelsRunningTasks(_ source: FailFastSource) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                \(source == .workflowKey ? "fail_fast: true" : "")
                kill_grace: 10s
                max_parallel: 4
                tasks:
                  slow:
                    run: |
                      trap 'echo TERM >> "$SANDBOX/slow.trap"; exit 0' TERM
                      echo ready > "$SANDBOX/slow.ready"
                      while :; do sleep 0.05; done
                  bad:
                    run: |
                      while [ ! -e "$SANDBOX/slow.ready" ]; do sleep 0.01; done
                      exit 1
                  after-slow: {needs: slow, run: "touch $SANDBOX/after-slow.ran"}
                finally:
                  cleanup: {run: "touch $SANDBOX/cleanup.ran"}
                """, source == .commandLineFlag ? ["--fail-fast"] : [])
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            #expect(run.wallSeconds < 5, "\(run)")
            #expect(sandbox.lines("slow.trap") == ["TERM"])
            #expect(!sandbox.exists("after-slow.ran"))
            #expect(sandbox.exists("cleanup.ran"))
            let record = try sandbox.record()
            #expect(record.status("bad") == "failed")
            #expect(record.status("slow") == "cancelled", "\(record.statuses)")
            #expect(record.task("slow")?["reason"] as? String == "fail_fast")
            #expect(["cancelled", "skipped"].contains(record.status("after-slow") ?? ""), "\(record.statuses)")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// Without fail_fast a failure leaves independent tasks running to the end.
        @Test func withoutFailFastIndependentTasksFinish() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                max_parallel: 4
                tasks:
                  slow:
                    run: |
                      while [ ! -e "$SANDBOX/bad.done" ]; do sleep 0.01; done
                      sleep 0.3
                      echo finished
                  bad: {run: "touch $SANDBOX/bad.done; exit 1"}
                  after-slow: {needs: slow, run: "true"}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["slow": "succeeded", "bad": "failed", "after-slow": "succeeded"], "\(record.overview)")
        }

        // MARK: limits

        struct Limit: CustomTestStringConvertible, Sendable {
            var name: String
            var workflow: String
            var arguments: [String] = []
            var limit: Int
            var testDescription: String { name }
        }

        static func intervalTask(_ name: String, extra: String = "") -> String {
            """
              \(name):
                \(extra)
                run: |
                  echo "$FLOWRUN_TASK start $(date +%s.%N)" >> "$SANDBOX/intervals"
                  sleep 0.3
                  echo "$FLOWRUN_TASK end $(date +%s.%N)" >> "$SANDBOX/intervals"

            """
        }

        static let sixTasks = (1...6).map { intervalTask("t\($0)") }.joined()

        static let limits: [Limit] = [
            Limit(name: "max_parallel: 2", workflow: "max_parallel: 2\ntasks:\n" + sixTasks, limit: 2),
            Limit(name: "--max-parallel 1 overrides max_parallel: 4", workflow: "max_parallel: 4\ntasks:\n" + sixTasks,
                  arguments: ["--max-parallel", "1"], limit: 1),
            Limit(name: "--max-parallel 3", workflow: "tasks:\n" + sixTasks, arguments: ["--max-parallel", "3"], limit: 3),
            Limit(name: "a semaphore of 2", workflow: "max_parallel: 6\nsemaphores: {pool: 2}\ntasks:\n"
                    + (1...5).map { intervalTask("t\($0)", extra: "semaphores: [pool]") }.joined(), limit: 2),
            Limit(name: "a group's concurrency of 2", workflow: """
                max_parallel: 6
                groups:
                  fan:
                    concurrency: 2
                    foreach: {range: [1, 5]}
                    task:
                      run: |
                        echo "$FLOWRUN_TASK start $(date +%s.%N)" >> "$SANDBOX/intervals"
                        sleep 0.3
                        echo "$FLOWRUN_TASK end $(date +%s.%N)" >> "$SANDBOX/intervals"
                """, limit: 2),
        ]

        /// Each task appends its start and end times; the most that overlap
        /// is the limit — never more, and (0.3 s tasks) reached.
        @Test(arguments: limits)
        func aLimitIsNeverExceededAndIsReached(_ limit: Limit) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(limit.workflow, limit.arguments)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let measured = intervals(fromLines: sandbox.lines("intervals"))
            #expect(measured.count >= 5, "\(sandbox.read("intervals") ?? "")")
            let overlap = maximumOverlap(measured.map { ($0.start, $0.end) })
            #expect(overlap == limit.limit, "at most \(overlap) ran at once (task clocks), the limit is \(limit.limit)\n\(sandbox.read("intervals") ?? "")")
            // The engine's own view: task_started … task_finished.
            let record = try sandbox.record()
            let fromEvents: [(Double, Double)] = record.names("task_started").compactMap { task in
                guard let start = double(record.events("task_started", task: task).first?["elapsed"]),
                      let end = double(record.finished(task)?["elapsed"]) else { return nil }
                return (start, end)
            }
            #expect(maximumOverlap(fromEvents) <= limit.limit, "the events show more than \(limit.limit) running\n\(record.overview)")
            let serialTime = 0.3 * Double(measured.count)
            let ideal = serialTime / Double(limit.limit)
            #expect(run.wallSeconds < ideal + 2.5, "took \(run.wallSeconds) s, ideal \(ideal) s\n\(run)")
        }

        // MARK: --only, --var

        @Test func onlyRunsTheNamedTasksAndWhatTheyNeed() throws {
            let sandbox = try RunSandbox()
            let workflow = """
                tasks:
                  a: {run: "touch $SANDBOX/a.ran"}
                  b: {run: "touch $SANDBOX/b.ran", needs: a}
                  c: {run: "touch $SANDBOX/c.ran", needs: b}
                  d: {run: "touch $SANDBOX/d.ran"}
                  e: {run: "touch $SANDBOX/e.ran", needs: c}
                  f: {run: "touch $SANDBOX/f.ran"}
                """
            let run = try sandbox.run(workflow, ["--only", "c", "--only", "d"])
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            for task in ["a", "b", "c", "d"] {
                #expect(sandbox.exists("\(task).ran"), "\(task) did not run")
            }
            for task in ["e", "f"] {
                #expect(!sandbox.exists("\(task).ran"), "\(task) ran but was not selected")
            }
            let record = try sandbox.record()
            for task in ["e", "f"] {
                #expect(record.events("task_started", task: task).isEmpty)
                #expect(record.status(task) == nil || record.status(task) == "skipped", "\(task): \(record.status(task) ?? "nil")")
            }
        }

        @Test func varsOverrideDeclaredValues() throws {
            let sandbox = try RunSandbox()
            let workflow = """
                vars: {greeting: hello, target: world}
                tasks:
                  say:
                    env: {TARGET: "${{ vars.target }}"}
                    run: printf '%s|%s' ${{ vars.greeting }} "$TARGET" > "$SANDBOX/said"
                """
            let plain = try sandbox.run(workflow)
            #expect(plain.exitStatus == 0, "\(plain)")
            #expect(sandbox.read("said") == "hello|world")

            let overridden = try RunSandbox()
            let run = try overridden.run(workflow, ["--var", "greeting=hi there; touch pwned", "--var", "target=a=b"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(overridden.read("said") == "hi there; touch pwned|a=b")
            #expect(!overridden.exists("pwned"))
        }

        static func position(of kind: String, _ task: String, in record: RunRecordFiles) -> Int? {
            record.events.firstIndex { $0?["event"] as? String == kind && $0?["task"] as? String == task }
        }
    }
}
