import Foundation
import Testing

extension RunEndToEnd {
    /// Issue 31: groups with static members and a fan-out, sequential
    /// stages in `--dry-run`, a failed join, member targets of a huge range,
    /// fan-outs over `vars`, and the live view's total.
    @Suite struct PlanningAtScaleTests {
        /// `group_finished` events of `group`, from the record.
        static func groupFinished(_ record: RunRecordFiles, _ group: String) -> [String: Any]? {
            record.events.compactMap { $0 }.last { $0["event"] as? String == "group_finished" && $0["group"] as? String == group }
        }

        /// A static member beside `foreach` counts among the members, as it does among those that succeeded.
        @Test func aGroupCountsItsStaticMembersBesideItsFanOut() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                groups:
                  build:
                    tasks:
                      prepare: {run: "true"}
                    foreach: [a, b]
                    task: {run: "true"}
                  build2:
                    tasks:
                      broken: {run: "exit 1"}
                    foreach: [a, b]
                    task: {run: "true"}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            #expect(run.stdout.contains("group    build succeeded (3/3 succeeded, "), "\(run)")
            #expect(run.stdout.contains("group    build2 failed (2/3 succeeded, "), "\(run)")
            let record = try sandbox.record()
            let build = try #require(Self.groupFinished(record, "build"), "\(record)")
            #expect(build["members"] as? Int == 3 && build["succeeded"] as? Int == 3, "\(build)")
            let build2 = try #require(Self.groupFinished(record, "build2"), "\(record)")
            #expect(build2["members"] as? Int == 3 && build2["succeeded"] as? Int == 2, "\(build2)")
        }

        /// A member that runs after another in a sequential group is staged after it.
        @Test func theDryRunStagesASequentialGroupsMembersInTheirOrder() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: """
                tasks:
                  ship: {needs: [release], run: "true"}
                groups:
                  release:
                    sequential: true
                    tasks:
                      build: {run: "true"}
                      publish: {run: "true"}
                    foreach: [eu, us]
                    task: {run: "true"}
                """)
            let json = try FlowrunBinary.run([file, "--dry-run", "--output", "json"])
            #expect(json.exitStatus == 0, "\(json)")
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let steps = try #require(plan["steps"] as? [[String: Any]])
            let stage = Dictionary(steps.map { ($0["name"] as? String ?? "", $0["stage"] as? Int ?? 0) }, uniquingKeysWith: { first, _ in first })
            #expect(stage["build"] == 1, "\(stage)")
            #expect(stage["publish"] == 2, "\(stage)")
            #expect(stage["release[*]"] == 3, "\(stage)")
            #expect(stage["release"] == 4, "\(stage)")
            #expect(stage["ship"] == 5, "\(stage)")
            let text = try FlowrunBinary.run([file, "--dry-run"])
            let firstStage = text.stdout.components(separatedBy: "Stage 2")[0]
            #expect(firstStage.contains("Stage 1 — starts at once") && firstStage.contains("build") && !firstStage.contains("publish"), "\(text)")
        }

        /// A join that can no longer succeed leaves its other running members to finish (make -k, go-task).
        @Test func aFailedJoinLetsItsRunningMembersFinish() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  a:
                    # Fails once b is running.
                    run: while [ ! -e "$SANDBOX/b-started" ]; do sleep 0.01; done; exit 1
                  b:
                    # Goes on once the join has failed (at most 10 s), then succeeds.
                    run: |
                      touch "$SANDBOX/b-started"
                      i=0
                      while ! grep -qs join_completed "$SANDBOX"/record/*/events.jsonl && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
                      echo done > "$SANDBOX/b-finished"
                joins:
                  all: {wait: [a, b]}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            let joined = try #require(record.events("join_completed").first, "\(record)")
            #expect(joined["status"] as? String == "failed", "\(joined)")
            #expect(record.finished("b")?["status"] as? String == "succeeded", "\(record.finished("b") ?? [:])")
            #expect(sandbox.read("b-finished") == "done\n", "\(run)")
            #expect(!run.stdout.contains("can no longer succeed)"), "\(run)")
            #expect(run.stdout.contains("\n    ◌ b  still running\n"), "the join block says b was left running: \(run)")
        }

        /// Under `fail_fast` the run stops: a failed join's running members are cancelled as before.
        @Test func underFailFastAFailedJoinCancelsItsRunningMembers() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                fail_fast: true
                tasks:
                  a: {run: 'while [ ! -e "$SANDBOX/b-started" ]; do sleep 0.01; done; exit 1'}
                  b: {run: 'touch "$SANDBOX/b-started"; sleep 20'}
                joins:
                  all: {wait: [a, b]}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            #expect(try sandbox.record().finished("b")?["status"] as? String == "cancelled", "\(run)")
        }

        static let bigRange = 2_000_000

        /// Naming one member of a 2,000,000-item range costs what the dry run
        /// does: no table of every member's name (the old lookup took about
        /// 12 s and 650 MB here).
        @Test(arguments: ["m-1999999", "g[1999998]", "m-7"])
        func oneMemberOfAHugeRangeRunsWithoutNamingEveryMember(target: String) throws {
            let sandbox = try RunSandbox()
            let text = """
                groups:
                  g:
                    foreach: {range: [1, \(Self.bigRange)]}
                    task:
                      name: m-${{ item }}
                      run: echo ${{ item }} > "$SANDBOX/ran"
                """
            let dryRun = try sandbox.run(text, ["--dry-run"])
            #expect(dryRun.exitStatus == 0, "\(dryRun)")
            let run = try sandbox.run(text, [target], timeout: .seconds(60))
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.read("ran") == (target == "m-7" ? "7\n" : "1999999\n"), "\(run)")
            #expect(run.stdout.contains("started (1 task,"), "\(run)")
            #expect(run.wallSeconds < 5, "\(target): \(run.wallSeconds) s")
            let (member, plan) = (run.peakRSSBytes, dryRun.peakRSSBytes)
            #expect(member < plan + 32 << 20, "\(target): \(member >> 20) MB against the dry run's \(plan >> 20) MB")
        }

        /// A misspelt target is refused as fast, with the same hint as before.
        @Test func aMisspeltTargetBesideAHugeRangeFailsAtOnce() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  lint: {run: "true"}
                groups:
                  g:
                    foreach: {range: [1, \(Self.bigRange)]}
                    task: {name: "m-${{ item }}", run: "true"}
                """, ["lnt"], timeout: .seconds(60))
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("no task, group, join or fan-out member is named 'lnt' (did you mean 'lint'?)"), "\(run)")
            #expect(run.wallSeconds < 5, "\(run.wallSeconds) s")
            #expect(run.peakRSSBytes < 64 << 20, "\(run.peakRSSBytes >> 20) MB")
        }

        static let servicesWorkflow = """
            vars:
              services: |
                mongodb
                redis
                nginx
            tasks:
              check: {needs: [start], run: "true"}
            groups:
              start:
                foreach: ${{ vars.services }}
                task:
                  name: start-${{ item }}
                  run: echo ${{ item }} >> "$SANDBOX/started"
            """

        /// A `foreach` over `vars` is sized when the run is planned: its members are targets and counted.
        @Test func aFanOutOverVarsIsSizedBeforeTheRun() throws {
            let sandbox = try RunSandbox()
            let one = try sandbox.run(Self.servicesWorkflow, ["start-redis"])
            #expect(one.exitStatus == 0, "\(one)")
            #expect(sandbox.lines("started") == ["redis"], "\(one)")
            #expect(one.stdout.contains("started (1 task,"), "\(one)")

            try FileManager.default.removeItem(atPath: sandbox.file("started"))
            let all = try sandbox.run(Self.servicesWorkflow)
            #expect(all.exitStatus == 0, "\(all)")
            #expect(all.stdout.contains("started (4 tasks,"), "\(all)")
            #expect(sandbox.lines("started").sorted() == ["mongodb", "nginx", "redis"], "\(all)")

            let file = try sandbox.write(workflow: Self.servicesWorkflow)
            let dryRun = try FlowrunBinary.run([file, "--dry-run", "--var", "services=alpha", "start-alpha"])
            #expect(dryRun.exitStatus == 0, "\(dryRun)")
            #expect(!dryRun.stdout.contains("sized at run time"), "\(dryRun)")

            // On Argo `vars` stay parameters a submit may change: the items are still read there.
            let export = try FlowrunBinary.run(["export", file, "--to", "argo"])
            #expect(export.exitStatus == 0, "\(export)")
            #expect(export.stdout.contains("withParam: \"{{tasks.start-items.outputs.result}}\"") && !export.stdout.contains("withItems"), "\(export)")
        }

        /// A fan-out over a task's stdout is still sized as it runs, and the start line says so.
        @Test func theStartLineCountsKnownMembersAndNamesTheRest() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  list: {run: "seq 1 2"}
                groups:
                  known:
                    foreach: {range: [1, 5]}
                    task: {run: "true"}
                  read:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task: {run: "true"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("started (6 tasks + 1 fan-out sized at run time,"), "\(run)")
            let started = try #require(try sandbox.record().events("run_started").first)
            #expect(started["members"] as? Int == 6 && started["sized_at_run_time"] as? [String] == ["read"], "\(started)")
        }
    }
}
