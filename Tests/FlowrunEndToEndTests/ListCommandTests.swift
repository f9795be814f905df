import Foundation
import Testing

/// `flowrun list [FILE]`: what a workflow can run, in plan order (issue 18 item 1).
@Suite struct ListCommandTests {
    static let workflow = """
        name: listed
        tasks:
          fetch: {run: "true", description: Get the sources}
          lint: {run: "true"}
        groups:
          checks:
            description: "All the checks \\e[31mred"
            needs: [fetch]
            tasks:
              unit: {run: "true", description: Unit tests}
              style: {run: "true"}
          shards:
            foreach: [a, b]
            task: {name: "shard-${{ item }}", run: "true", description: One shard}
        joins:
          enough:
            description: Two of three
            wait: [unit, style, lint]
            need: 2
        finally:
          clean: {run: "true", description: Tidy up}
        """

    @Test func theTextIsAlignedColumnsInPlanOrder() throws {
        let directory = try TemporaryDirectory()
        try directory.write(Self.workflow, to: "flowrun.yaml")
        let run = try FlowrunBinary.run(["list"], in: directory.path)
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stdout == """
            fetch      task     Get the sources
            lint       task
            shards[*]  fan-out  One shard                 in shards
            unit       task     Unit tests                in checks
            style      task                               in checks
            shards     group                              members: shards[*]
            checks     group    All the checks \\e[31mred  members: unit, style
            enough     join     Two of three              waits for: unit, style, lint
            clean      finally  Tidy up

            """, "\(run)")
        #expect(!run.stdout.utf8.contains(0x1B), "an escape in a description reaches the terminal escaped")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/.flowrun"), "list runs nothing")
    }

    @Test func theJSONIsAnArrayOfNameKindDescriptionGroup() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(Self.workflow, to: "listed.yaml")
        let run = try FlowrunBinary.run(["list", file, "--output", "json"], in: directory.path)
        #expect(run.exitStatus == 0, "\(run)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]], "\(run)")
        #expect(entries.map { $0["name"] as? String } == ["fetch", "lint", "shards[*]", "unit", "style", "shards", "checks", "enough", "clean"])
        #expect(entries.map { $0["kind"] as? String } == ["task", "task", "fan-out", "task", "task", "group", "group", "join", "finally"])
        #expect(entries.map { $0["group"] as? String } == [nil, nil, "shards", "checks", "checks", nil, nil, nil, nil])
        #expect(entries.map { $0["description"] as? String }
                == ["Get the sources", nil, "One shard", "Unit tests", nil, nil, "All the checks \u{1B}[31mred", "Two of three", "Tidy up"])
        // description is always there (null when none); group only for members.
        #expect(entries.allSatisfy { $0.keys.contains("description") })
        #expect(entries[0].keys.sorted() == ["description", "kind", "name"])
    }

    @Test func anInvalidFileIsExit2WithItsDiagnostics() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("tasks:\n  a: {run: \"true\", needs: [nope]}\n", to: "bad.yaml")
        let run = try FlowrunBinary.run(["list", file], in: directory.path)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(!run.diagnostics.isEmpty, "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
    }
}
