import Foundation
import Testing

extension RunEndToEndParallel {
    /// A group's own `if:` and `when:` (SPEC §15, issue 35), read as a
    /// task's once the group's needs have settled.
    @Suite struct GroupConditionTests {
        @Test func aGroupWhoseIfIsFalseSkipsItsMembers() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                vars: {channel: beta}
                tasks:
                  after: {run: "touch $SANDBOX/after", needs: publish, when: always}
                groups:
                  publish:
                    if: ${{ vars.channel == 'stable' }}
                    tasks:
                      upload: {run: "touch $SANDBOX/upload"}
                    foreach: [eu, us]
                    task: {run: "touch $SANDBOX/$FLOWRUN_ITEM"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let group = try #require(record.events("group_finished").first { $0["group"] as? String == "publish" })
            #expect(group["status"] as? String == "skipped", "\(run)")
            #expect(!sandbox.exists("upload") && !sandbox.exists("eu") && !sandbox.exists("us"), "\(run)")
            #expect(sandbox.exists("after"))
        }

        @Test func aGroupWhoseIfIsTrueRuns() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                vars: {channel: stable}
                groups:
                  publish:
                    if: ${{ vars.channel == 'stable' }}
                    tasks:
                      upload: {run: "touch $SANDBOX/upload"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.exists("upload"), "\(run)")
        }

        /// `when: failure`: a group of clean-up steps that runs only when a need failed.
        @Test func aGroupWithWhenFailureRunsAfterAFailure() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  deploy: {run: "exit 1"}
                groups:
                  rollback:
                    needs: deploy
                    when: failure
                    tasks:
                      restore: {run: "touch $SANDBOX/restore"}
                      notify: {run: "touch $SANDBOX/notify"}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            #expect(sandbox.exists("restore") && sandbox.exists("notify"), "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses["restore"] == "succeeded", "\(run)")
        }

        /// `when: failure` with nothing failed: skipped, and the run succeeds.
        @Test func aGroupWithWhenFailureIsSkippedWhenAllSucceeded() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  deploy: {run: "true"}
                groups:
                  rollback:
                    needs: deploy
                    when: failure
                    tasks:
                      restore: {run: "touch $SANDBOX/restore"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(!sandbox.exists("restore"), "\(run)")
        }

        @Test func aWrongWhenIsAnErrorAtItsLine() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                groups:
                  rollback:
                    when: failed
                    tasks:
                      restore: {run: "true"}
                """)
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains(":3:11: error: when must be success, failure or always, found 'failed'"), "\(run.stderr)")
        }

        @Test func theDryRunShowsAGroupsConditions() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  deploy: {run: "true"}
                groups:
                  rollback:
                    needs: deploy
                    when: always
                    if: ${{ tasks.deploy.status == 'failed' }}
                    tasks:
                      restore: {run: "true"}
                """, ["--dry-run"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("when:      always"), "\(run.stdout)")
            #expect(run.stdout.contains("if:        tasks.deploy.status == 'failed'"), "\(run.stdout)")
        }

        /// A group's `if:` reads tasks only through its needs, as a task's does.
        @Test func aGroupsIfReadingATaskItDoesNotNeedIsAnError() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  deploy: {run: "true"}
                groups:
                  rollback:
                    if: ${{ tasks.deploy.status == 'failed' }}
                    tasks:
                      restore: {run: "true"}
                """)
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("deploy"), "\(run.stderr)")
        }
    
        /// Argo has `when:` and `depends` on the group's DAG task: both are exported.
        @Test func theArgoExportCarriesAGroupsConditions() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                vars: {channel: beta}
                tasks:
                  deploy: {run: "./deploy"}
                groups:
                  rollback:
                    needs: deploy
                    when: failure
                    tasks:
                      restore: {run: "./restore"}
                  publish:
                    needs: deploy
                    if: ${{ vars.channel == 'stable' }}
                    tasks:
                      upload: {run: "./upload"}
                """, to: "groups.yaml")
            let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains(#"depends: "(deploy.Failed || deploy.Errored)""#), "\(run.stdout)")
            #expect(run.stdout.contains(#"when: "{{=(workflow['parameters']['channel'] == 'stable')}}""#), "\(run.stdout)")
        }
    }
}
