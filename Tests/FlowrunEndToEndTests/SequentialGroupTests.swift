import Foundation
import Testing

extension RunEndToEndParallel {
    /// `sequential: true` groups (SPEC §10, issue 23 item 4): members run one
    /// at a time in written order, a failure skips the rest and fails the group.
    @Suite struct SequentialGroupTests {
        /// Each member's [start, finish] from the record's events, in start order.
        static func spans(_ record: RunRecordFiles) -> [(name: String, start: Double, end: Double)] {
            let finished = Dictionary(record.events("task_finished").compactMap { event in
                (event["task"] as? String).map { ($0, double(event["elapsed"]) ?? 0) }
            }, uniquingKeysWith: { _, last in last })
            return record.events("task_started").compactMap { event in
                guard let name = event["task"] as? String, let start = double(event["elapsed"]), let end = finished[name] else { return nil }
                return (name, start, end)
            }.sorted { $0.start < $1.start }
        }

        static func expectOneAtATime(_ spans: [(name: String, start: Double, end: Double)], sourceLocation: SourceLocation = #_sourceLocation) {
            for (earlier, later) in zip(spans, spans.dropFirst()) {
                #expect(later.start >= earlier.end, "\(later.name) started at \(later.start) before \(earlier.name) finished at \(earlier.end)", sourceLocation: sourceLocation)
            }
        }

        /// Written order, not name order or plan order; with room for all
        /// four at once (max_parallel 16) they still run one by one.
        @Test func membersRunOneByOneInWrittenOrder() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                groups:
                  release:
                    sequential: true
                    tasks:
                      zeta: {run: "sleep 0.2; echo zeta >> $SANDBOX/order"}
                      alpha: {run: "sleep 0.1; echo alpha >> $SANDBOX/order"}
                      mid: {run: "echo mid >> $SANDBOX/order"}
                      beta: {run: "echo beta >> $SANDBOX/order"}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("order") == ["zeta", "alpha", "mid", "beta"], "\(run)")
            let record = try sandbox.record()
            let spans = Self.spans(record)
            #expect(spans.map(\.name) == ["zeta", "alpha", "mid", "beta"])
            Self.expectOneAtATime(spans)
        }

        /// The first failure skips the rest; the group fails, what needs it is skipped.
        @Test func aFailureSkipsTheRestAndFailsTheGroup() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  after: {run: "touch $SANDBOX/after", needs: release}
                  report: {run: "touch $SANDBOX/report", needs: release, when: always}
                groups:
                  release:
                    sequential: true
                    tasks:
                      tag: {run: "touch $SANDBOX/tag"}
                      upload: {run: "exit 3"}
                      announce: {run: "touch $SANDBOX/announce", when: always}
                      cleanup: {run: "touch $SANDBOX/cleanup"}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["tag": "succeeded", "upload": "failed", "announce": "skipped", "cleanup": "skipped",
                                        "after": "skipped", "report": "succeeded"], "\(run)")
            #expect(record.finished("announce")?["reason"] as? String == "upload did not succeed (sequential group)")
            let group = try #require(record.events("group_finished").first { $0["group"] as? String == "release" })
            #expect(group["status"] as? String == "failed")
            #expect(sandbox.exists("tag") && !sandbox.exists("announce") && !sandbox.exists("cleanup") && !sandbox.exists("after"))
            #expect(sandbox.exists("report"))
        }

        /// A member skipped by its own `if:` does not stop the sequence;
        /// `continue_on_error` lets it go on too.
        @Test func ownConditionSkipsAndAllowedFailuresDoNotStopIt() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                groups:
                  steps:
                    sequential: true
                    tasks:
                      maybe: {run: "true", if: "${{ 1 == 2 }}"}
                      flaky: {run: "exit 1", continue_on_error: true}
                      last: {run: "touch $SANDBOX/last"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["maybe": "skipped", "flaky": "failed", "last": "succeeded"], "\(run)")
        }

        /// A fan-out runs its members in item order, one at a time, after the static members.
        @Test func aSequentialFanOutRunsInItemOrder() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                groups:
                  rollout:
                    sequential: true
                    tasks:
                      prepare: {run: "sleep 0.1; echo prepare >> $SANDBOX/order"}
                    foreach: [eu, us, ap, sa]
                    task: {name: "to-${{ item }}", run: "sleep 0.05; echo $FLOWRUN_ITEM >> $SANDBOX/order"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("order") == ["prepare", "eu", "us", "ap", "sa"], "\(run)")
            let spans = Self.spans(try sandbox.record())
            #expect(spans.map(\.name) == ["prepare", "to-eu", "to-us", "to-ap", "to-sa"])
            Self.expectOneAtATime(spans)
        }

        @Test func aFailedFanOutMemberSkipsTheLaterItems() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                groups:
                  rollout:
                    sequential: true
                    foreach: [eu, us, ap]
                    task: {name: "to-${{ item }}", run: "[ $FLOWRUN_ITEM != us ]"}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            #expect(try sandbox.record().statuses == ["to-eu": "succeeded", "to-us": "failed", "to-ap": "skipped"], "\(run)")
        }

        /// Naming a later member runs it (and its own needs) only: order is
        /// not a need. Naming two runs them in written order.
        @Test func targetsRunOnlyTheNamedMembersInOrder() throws {
            let sandbox = try RunSandbox()
            let text = """
                groups:
                  release:
                    sequential: true
                    tasks:
                      tag: {run: "sleep 0.2; echo tag >> $SANDBOX/order"}
                      build: {run: "sleep 0.2; echo build >> $SANDBOX/order"}
                      publish: {run: "echo publish >> $SANDBOX/order"}
                """
            let one = try sandbox.run(text, ["publish"])
            #expect(one.exitStatus == 0, "\(one)")
            #expect(sandbox.lines("order") == ["publish"], "\(one)")
            try FileManager.default.removeItem(atPath: sandbox.file("order"))
            try FileManager.default.removeItem(atPath: sandbox.logDirectory)
            let two = try sandbox.run(text, ["publish", "tag"])
            #expect(two.exitStatus == 0, "\(two)")
            #expect(sandbox.lines("order") == ["tag", "publish"], "\(two)")
        }

        @Test func theDryRunShowsTheOrder() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: """
                groups:
                  release:
                    sequential: true
                    tasks:
                      tag: {run: "true"}
                      publish: {run: "true"}
                """)
            let run = try FlowrunBinary.run([file, "--dry-run"])
            #expect(run.stdout.contains("release  [group, 2 members, sequential]"), "\(run)")
            #expect(run.stdout.contains("after:     tag (sequential group release)"), "\(run)")
            let json = try FlowrunBinary.run([file, "--dry-run", "--output", "json"])
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let steps = try #require(plan["steps"] as? [[String: Any]])
            #expect(steps.first { $0["name"] as? String == "publish" }?["runs_after"] as? String == "tag")
            #expect(steps.first { $0["name"] as? String == "release" }?["sequential"] as? Bool == true)
        }

        /// Each would wait for the other: a validation error at the need.
        @Test func aMemberThatNeedsALaterMemberIsAnError() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: """
                groups:
                  release:
                    sequential: true
                    tasks:
                      tag: {run: "true", needs: [publish]}
                      publish: {run: "true"}
                """)
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("\(file):5:34: error: 'tag' needs 'publish', which runs after it in sequential group 'release'"), "\(run)")
        }

        /// On Argo: a chain of `depends`, `parallelism: 1`, and a warning for what differs.
        @Test func theArgoExportChainsTheMembers() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: """
                groups:
                  release:
                    sequential: true
                    tasks:
                      tag: {run: "true"}
                      publish: {run: "true"}
                """)
            let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("depends: tag.Succeeded"), "\(run)")
            #expect(run.stdout.contains("parallelism: 1"), "\(run)")
            #expect(run.diagnostics.contains { $0.hasPrefix("\(file):2:3: warning: emulated on Argo: group 'release' is sequential") }, "\(run)")
        }
    }
}
