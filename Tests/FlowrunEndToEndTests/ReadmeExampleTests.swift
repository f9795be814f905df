import Foundation
import Testing

/// The README's first workflow (`hello.yaml`) is copied from the README
/// itself, then validated, planned and run with the built binary: the
/// example a new user copies first works, and `validate` prints the line the
/// README shows.
@Suite struct ReadmeExampleTests {
    /// The YAML block that starts with `# hello.yaml`, as the README has it.
    static func helloWorkflow() throws -> String {
        let readme = try String(contentsOfFile: DocsPathsTests.root + "/README.md", encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0 == "# hello.yaml" }, "README.md has no '# hello.yaml' block")
        let end = try #require(lines[start...].firstIndex { $0.hasPrefix("```") }, "the hello.yaml block never ends")
        return lines[start..<end].joined(separator: "\n") + "\n"
    }

    @Test func theFirstWorkflowValidatesAsTheReadmeShowsAndRuns() throws {
        let folder = try TemporaryDirectory(prefix: "flowrun-readme")
        _ = try folder.write(try Self.helloWorkflow(), to: "hello.yaml")

        let validated = try FlowrunBinary.run(["validate", "hello.yaml"], in: folder.path)
        #expect(validated.exitStatus == 0, "\(validated)")
        #expect(validated.stdout == "hello.yaml: valid (1 task + 1 fan-out sized at run time, 1 group, 1 join)\n", "\(validated)")

        // The dry run's footer counts as `validate` does: one task, not "1 tasks".
        let dryRun = try FlowrunBinary.run(["hello.yaml", "--dry-run"], in: folder.path)
        #expect(dryRun.stdout.hasSuffix("\n1 task + 1 fan-out sized at run time, 1 group, 1 join\n"), "\(dryRun)")
        // A group of one member is "1 member".
        let one = try folder.write("groups:\n  solo:\n    tasks: { only: { run: \"true\" } }\n  pair:\n    foreach: [x]\n    task: { run: \"true\" }\n", to: "one.yaml")
        let onePlan = try FlowrunBinary.run([one, "--dry-run"], in: folder.path)
        #expect(onePlan.stdout.contains("  solo  [group, 1 member]\n") && onePlan.stdout.contains("  pair  [group, 1 member]\n"), "\(onePlan)")
        #expect(onePlan.stdout.hasSuffix("\n2 tasks, 2 groups, 0 joins\n"), "\(onePlan)")
        for plan in [["--dry-run"], ["--dry-run", "--output", "json"]] {
            let planned = try FlowrunBinary.run(["hello.yaml"] + plan, in: folder.path)
            #expect(planned.exitStatus == 0, "\(plan): \(planned)")
        }
        let run = try FlowrunBinary.run(["hello.yaml", "--output", "plain"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        for item in ["a", "b", "c"] {
            #expect(run.stdout.contains("fetch-\(item)"), "no member fetch-\(item)\n\(run)")
        }
    }
}
