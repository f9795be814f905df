import Foundation
import Testing

extension RunEndToEndParallel {
    /// Skips as GitHub counts them (SPEC §15, issue 35): a `sequential`
    /// group is a job, and a job whose steps were skipped by their own
    /// `if:` succeeds — fastapi's alls-green needs it to.
    @Suite struct GitHubSkipTests {
        @Test func aSequenceWhoseMembersAllChoseToSkipSucceeds() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                vars: {event: push}
                tasks:
                  alls-green: {run: "touch $SANDBOX/green", needs: docs}
                groups:
                  docs:
                    sequential: true
                    tasks:
                      build-docs: {run: "true", if: "${{ vars.event == 'pull_request' }}"}
                      deploy-docs: {run: "true", if: "${{ vars.event == 'pull_request' }}"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["build-docs": "skipped", "deploy-docs": "skipped", "alls-green": "succeeded"], "\(run)")
            let group = try #require(record.events("group_finished").first { $0["group"] as? String == "docs" })
            #expect(group["status"] as? String == "succeeded", "\(run)")
            #expect(sandbox.exists("green"))
        }

        /// The same with the members made by a sequential fan-out.
        @Test func aSequentialFanOutWhoseMembersAllChoseToSkipSucceeds() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  after: {run: "touch $SANDBOX/after", needs: rollout}
                groups:
                  rollout:
                    sequential: true
                    foreach: [eu, us]
                    task: {name: "to-${{ item }}", run: "true", if: "${{ item == 'ap' }}"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.exists("after"), "\(run)")
        }

        /// Not a sequence: a group whose every member was skipped is still
        /// skipped, and so is what needs it (SPEC §10).
        @Test func aPlainGroupWhoseMembersAllSkippedIsStillSkipped() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  after: {run: "touch $SANDBOX/after", needs: checks}
                groups:
                  checks:
                    tasks:
                      one: {run: "true", if: "${{ 1 == 2 }}"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(try sandbox.record().statuses["after"] == "skipped", "\(run)")
        }

        /// A member skipped because a need failed is no choice of its own: the sequence is skipped.
        @Test func aSequenceSkippedByAFailedNeedIsSkipped() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  broken: {run: "exit 1"}
                  after: {run: "touch $SANDBOX/after", needs: docs}
                groups:
                  docs:
                    sequential: true
                    tasks:
                      build-docs: {run: "true", needs: broken}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            #expect(!sandbox.exists("after"), "\(run)")
        }
    }
}
