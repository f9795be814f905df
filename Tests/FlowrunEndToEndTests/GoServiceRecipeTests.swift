import Foundation
import Testing

extension RunEndToEndParallel {
    /// The recipe `workflows/go-service.yaml` (includes, aliases, the words
    /// after `--`), run as its header says (issue 35).
    @Suite struct GoServiceRecipeTests {
        static let recipe = WorkflowsTests.folder + "/go-service.yaml"

        @Test func testByItsAliasGetsTheWordsAfterDoubleDash() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(
                sandbox.arguments(Self.recipe, ["t", "--", "-run", "TestParse", "-v"]), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("go-service-out/test-command.txt") == ["go", "test", "./...", "-run", "TestParse", "-v"], "\(run)")
            #expect(try sandbox.record().statuses == ["generate": "succeeded", "build": "succeeded", "test": "succeeded"])
        }

        @Test func releaseRunsTheIncludedDocsInTheirFolder() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(
                sandbox.arguments(Self.recipe, ["release", "--stream"]), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("docs:build | docs built as html in go-service\n"), "\(run)")
            // The version is computed once by its command (no git repository here: "dev").
            #expect(sandbox.read("go-service-out/release.txt") == "released service dev\n")
            #expect(try sandbox.record().statuses == [
                "vars.version": "succeeded", "generate": "succeeded", "build": "succeeded", "test": "succeeded", "docs:build": "succeeded", "docs:publish": "succeeded",
                "release": "succeeded",
            ])
            // A bare test run passed no words: the command is go test's alone.
            let bare = try RunSandbox()
            let plain = try FlowrunBinary.run(bare.arguments(Self.recipe, []), in: bare.path, environment: bare.environment)
            #expect(plain.exitStatus == 0, "\(plain)")
            #expect(bare.lines("go-service-out/test-command.txt") == ["go", "test", "./..."])
        }
    }
}
