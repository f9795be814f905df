import Foundation
import Testing

extension RunEndToEndParallel {
    /// `aliases:` on a task, a group and a template call (SPEC §15): each
    /// runs what its owner runs, `list` shows them, a typo's hint knows
    /// them, and a clash is an error at the alias.
    @Suite struct AliasTests {
        static let workflow = """
            templates:
              greet: { params: { who: ~ }, run: 'echo "hello ${{ params.who }}" >> "$SANDBOX/ran"' }
            tasks:
              build:
                aliases: [b, compile]
                run: echo build >> "$SANDBOX/ran"
              hello: { uses: greet, with: { who: world }, aliases: [hi] }
            groups:
              checks:
                aliases: c
                tasks:
                  lint: { run: echo lint >> "$SANDBOX/ran" }
            """

        @Test func anAliasRunsWhatItsOwnerRuns() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow, ["b", "c", "hi"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(Set(sandbox.lines("ran")) == ["build", "lint", "hello world"], "\(run)")
            #expect(try sandbox.record().statuses.filter { $0.key != "checks" } == ["build": "succeeded", "lint": "succeeded", "hello": "succeeded"])
        }

        @Test func listShowsAliasesAndATypoIsHintedTowardsOne() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: Self.workflow)
            let listed = try FlowrunBinary.run(["list", file])
            #expect(listed.exitStatus == 0, "\(listed)")
            let lines = listed.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("build ") && $0.hasSuffix("aliases: b, compile") }, "\(listed)")
            #expect(lines.contains { $0.hasPrefix("checks ") && $0.contains("aliases: c · members: lint") }, "\(listed)")
            let json = try FlowrunBinary.run(["list", file, "--output", "json"])
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            #expect(entries.first { $0["name"] as? String == "build" }?["aliases"] as? [String] == ["b", "compile"], "\(json)")
            #expect(entries.first { $0["name"] as? String == "lint" }?["aliases"] == nil, "\(json)")
            let typo = try FlowrunBinary.run([file, "compil", "--dry-run"])
            #expect(typo.exitStatus == 2, "\(typo)")
            #expect(typo.stderr == "flowrun: no task, group, join or fan-out member is named 'compil' (did you mean 'compile'?)\n", "\(typo)")
        }

        @Test func anAliasThatClashesIsAnErrorAtIt() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: """
                tasks:
                  build: { aliases: [test], run: 'true' }
                  test: { aliases: [t], run: 'true' }
                  lint: { aliases: [t], run: 'true' }
                """)
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("\(file):2:22: error: alias 'test' of 'build' is already the name of the task at 3:3"), "\(run)")
            #expect(run.stderr.contains("\(file):4:21: error: alias 't' of 'lint' names two things: it is already an alias of 'test' at 3:21"), "\(run)")
        }
    }
}
