import Foundation
import Testing

extension RunEndToEndParallel {
    /// The recipes `workflows/build-targets.yaml` (a default goal and
    /// targets) and `workflows/ordered-release.yaml` (sequential groups), run
    /// as their headers say (issue 23 items 1 and 4).
    @Suite struct TargetRecipesTests {
        static let buildTargets = WorkflowsTests.folder + "/build-targets.yaml"
        static let orderedRelease = WorkflowsTests.folder + "/ordered-release.yaml"

        static func statuses(_ sandbox: RunSandbox) throws -> [String: String] { try sandbox.record().statuses }

        @Test func buildTargetsBareRunsTheDefaultGoal() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(sandbox.arguments(Self.buildTargets, []), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(try Self.statuses(sandbox) == ["gen": "succeeded", "build": "succeeded", "test": "succeeded"], "\(run)")
            #expect(!sandbox.exists("build-targets-out/docs.txt"))
        }

        @Test func buildTargetsNamedTargetsAndAMember() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(
                sandbox.arguments(Self.buildTargets, ["package", "check-py3.12"]), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(try Self.statuses(sandbox) == [
                "gen": "succeeded", "build": "succeeded", "test": "succeeded", "docs": "succeeded", "package": "succeeded",
                "check-py3.12": "succeeded",
            ], "\(run)")
            #expect(sandbox.read("build-targets-out/checks.txt") == "checked with python 3.12\n")
            #expect(sandbox.exists("build-targets-out/app.tar"))
        }

        @Test func buildTargetsListMarksTheDefaultAndATypoGetsAHint() throws {
            let listed = try FlowrunBinary.run(["list", Self.buildTargets])
            #expect(listed.exitStatus == 0, "\(listed)")
            let testLine = listed.stdout.split(separator: "\n").first { $0.hasPrefix("test ") }
            #expect(testLine?.hasSuffix("default") == true, "\(listed)")
            let typo = try FlowrunBinary.run([Self.buildTargets, "chek-py3.13", "--dry-run"])
            #expect(typo.exitStatus == 2, "\(typo)")
            #expect(typo.stderr == "flowrun: no task, group, join or fan-out member is named 'chek-py3.13' (did you mean 'check-py3.13'?)\n", "\(typo)")
        }

        @Test func orderedReleaseRunsEveryStepInOrder() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(sandbox.arguments(Self.orderedRelease, []), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("ordered-release-out/steps.txt") == [
                "tag v2.4.0", "build 2.4.0", "upload 2.4.0", "announce 2.4.0",
                "rollout eu-west", "rollout us-east", "rollout ap-south", "smoke test",
            ], "\(run)")
            RunEndToEndParallel.SequentialGroupTests.expectOneAtATime(RunEndToEndParallel.SequentialGroupTests.spans(try sandbox.record()).filter { !["check", "smoke-test", "vars.version"].contains($0.name) })
        }

        @Test func orderedReleaseStopsAtTheFailedUpload() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(
                sandbox.arguments(Self.orderedRelease, ["--var", "fail_at=upload"]), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 1, "\(run)")
            #expect(sandbox.lines("ordered-release-out/steps.txt") == ["tag v2.4.0", "build 2.4.0"], "\(run)")
            #expect(try Self.statuses(sandbox) == [
                "vars.version": "succeeded", "check": "succeeded", "tag": "succeeded", "build": "succeeded", "upload": "failed",
                "announce": "skipped", "smoke-test": "skipped",
            ], "\(run)")
        }
    }
}
