import Foundation
import Testing

extension RunEndToEnd {
    /// SPEC §10 semantics (issue 23 item 5): a group whose members were all
    /// skipped is `skipped`; an empty fan-out still succeeds; `max_parallel`
    /// is 16 on every machine unless the file says `cpus`.
    @Suite struct GroupSkipAndParallelDefaultTests {
        /// GitHub Actions skips the job after a job whose steps were all
        /// skipped; so does flowrun, and `when: always` still runs.
        @Test func aGroupWhoseMembersWereAllSkippedIsSkipped() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  changed: {run: "echo no"}
                  deploy: {run: "touch $SANDBOX/deploy", needs: test}
                  report: {run: "touch $SANDBOX/report", needs: test, when: always}
                groups:
                  test:
                    needs: changed
                    foreach: [a, b, c]
                    task: {run: "touch $SANDBOX/test-$FLOWRUN_ITEM", if: "${{ tasks.changed.stdout == 'yes' }}"}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "skipped tasks and groups do not fail a run\n\(run)")
            let record = try sandbox.record()
            let group = try #require(record.events("group_finished").first)
            #expect(group["status"] as? String == "skipped", "\(run)")
            #expect(group["reason"] as? String == "every member was skipped")
            #expect(record.status("deploy") == "skipped", "\(run)")
            #expect(!sandbox.exists("deploy"))
            #expect(sandbox.exists("report"), "when: always runs after a skipped group\n\(run)")
            #expect(run.stdout.contains("group    test skipped (0/3 succeeded"), "\(run)")
        }

        /// One member that ran keeps the group `succeeded`; an empty fan-out
        /// succeeds and what needs it runs.
        @Test func oneMemberThatRanOrNoMembersAtAllSucceeds() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  after-some: {run: "touch $SANDBOX/after-some", needs: some}
                  after-empty: {run: "touch $SANDBOX/after-empty", needs: empty}
                groups:
                  some:
                    tasks:
                      ran: {run: "true"}
                      not: {run: "true", if: "${{ 1 == 2 }}"}
                  empty:
                    foreach: []
                    task: {run: "true"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let groups = Dictionary(try sandbox.record().events("group_finished").compactMap { event in
                (event["group"] as? String).map { ($0, event["status"] as? String ?? "") }
            }, uniquingKeysWith: { _, last in last })
            #expect(groups == ["some": "succeeded", "empty": "succeeded"], "\(run)")
            #expect(sandbox.exists("after-some") && sandbox.exists("after-empty"), "\(run)")
        }

        /// A group skipped because its need failed skips its members too
        /// (the run used to wait for them forever).
        @Test func aGroupSkippedBeforeItStartsSkipsItsMembers() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  broken: {run: "exit 1"}
                groups:
                  later:
                    needs: broken
                    tasks:
                      one: {run: "touch $SANDBOX/one"}
                      two: {run: "touch $SANDBOX/two"}
                """, timeout: .seconds(10))
            #expect(!run.timedOut, "\(run)")
            #expect(run.exitStatus == 1, "\(run)")
            #expect(try sandbox.record().statuses == ["broken": "failed", "one": "skipped", "two": "skipped"], "\(run)")
        }

        /// Eight one-second tasks with no max_parallel take about a second on
        /// a two-core machine (the CPU count would make it four seconds).
        @Test func eightOneSecondTasksWithNoMaxParallelTakeAboutASecond() throws {
            let sandbox = try RunSandbox()
            var text = "tasks:\n"
            for index in 1...8 { text += "  t\(index): {run: sleep 1}\n" }
            let run = try sandbox.run(text)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.wallSeconds < 3, "8 × sleep 1 took \(run.wallSeconds) s\n\(run)")
            let starts = try sandbox.record().events("task_started").compactMap { double($0["elapsed"]) }
            #expect(starts.count == 8)
            #expect((starts.max() ?? 9) - (starts.min() ?? 0) < 0.9, "every task started at once: \(starts)")
        }

        @Test func theDefaultIsSixteenAndCpusIsTheCPUCount() throws {
            let sandbox = try RunSandbox()
            let plain = try sandbox.write(workflow: "tasks:\n  a: {run: \"true\"}\n", to: "plain.yaml")
            let cpus = try sandbox.write(workflow: "max_parallel: cpus\ntasks:\n  a: {run: \"true\"}\n", to: "cpus.yaml")
            let defaulted = try FlowrunBinary.run([plain, "--dry-run"])
            #expect(defaulted.stdout.contains("max_parallel 16 (default)"), "\(defaulted)")
            let counted = try FlowrunBinary.run([cpus, "--dry-run", "--output", "json"])
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(counted.stdout.utf8)) as? [String: Any], "\(counted)")
            let workflow = try #require(plan["workflow"] as? [String: Any])
            #expect(integer(workflow["max_parallel"]) == ProcessInfo.processInfo.activeProcessorCount, "\(counted)")
            let wrong = try sandbox.write(workflow: "max_parallel: cpu\ntasks:\n  a: {run: \"true\"}\n", to: "wrong.yaml")
            let refused = try FlowrunBinary.run(["validate", wrong])
            #expect(refused.exitStatus == 2, "\(refused)")
            #expect(refused.stderr.contains("\(wrong):1:15: error: max_parallel takes a whole number or cpus (the CPU count), found 'cpu' (did you mean 'cpus'?)"), "\(refused)")
        }
    }
}
