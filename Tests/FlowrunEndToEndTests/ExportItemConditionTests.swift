import Foundation
import Testing

/// Argo's own `parameter-aggregation-dag` example: a fan-out over another
/// fan-out's results, skipping members by a field of their item. flowrun's
/// `if: ${{ item.outputs.evenness == 'even' }}` exports to a `when` Argo
/// evaluates per item, and the item list carries each field read.
@Suite struct ExportItemConditionTests {
    static let workflow = """
        groups:
          odd-or-even:
            foreach: { range: [1, 4] }
            task:
              run: |
                if [ $(( FLOWRUN_ITEM % 2 )) -eq 0 ]; then e=even; else e=odd; fi
                echo "evenness=$e" >> "$FLOWRUN_OUTPUT"
                echo "num=$FLOWRUN_ITEM" >> "$FLOWRUN_OUTPUT"
          divide-by-2:
            needs: [odd-or-even]
            foreach: ${{ groups.odd-or-even.results }}
            task:
              if: ${{ item.outputs.evenness == 'even' }}
              env: { NUM: "${{ item.outputs.num }}" }
              run: echo $(( NUM / 2 ))
        """

    @Test func anIfReadingAnItemsOutputsExportsAsAWhenPerItem() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(Self.workflow, to: "aggregate.yaml")
        let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(!run.stderr.contains("error:"), "\(run)")
        let documents = try ArgoManifest.documents(run.stdout)
        let workflows = documents.filter { $0["kind"] as? String == "Workflow" }
        try SchemaValidator.validate(workflows, label: "aggregate")
        for problem in ArgoManifest.semanticProblems(documents) { Issue.record("\(problem)") }
        let templates = try #require((workflows.first?["spec"] as? [String: Any])?["templates"] as? [[String: Any]])
        let tasks = templates.compactMap { ($0["dag"] as? [String: Any])?["tasks"] as? [[String: Any]] }.flatMap { $0 }
        let each = try #require(tasks.first { $0["name"] as? String == "divide-by-2-each" }, "\(tasks.map { $0["name"] ?? "" })")
        #expect(each["when"] as? String == "{{=(item['outputs']['evenness'] == 'even')}}", "\(each)")
        let arguments = ((each["arguments"] as? [String: Any])?["parameters"] as? [[String: Any]]) ?? []
        #expect(arguments.contains { $0["value"] as? String == "{{item.outputs.num}}" }, "\(arguments)")

        // The item list gives each member those fields as keys of their own.
        let items = try #require(templates.first { $0["name"] as? String == "divide-by-2-items" })
        let script = try #require(items["script"] as? [String: Any])
        var environment: [String: String] = [:]
        for entry in script["env"] as? [[String: Any]] ?? [] { environment[entry["name"] as? String ?? ""] = entry["value"] as? String }
        #expect(environment["FLOWRUN_ITEM_FIELDS"] == "outputs.num\noutputs.evenness", "\(environment)")
        environment["FLOWRUN_ITEMS"] = #"""
            [{"name":"odd-or-even[0]","item":"1","status":"succeeded","stdout":"","outputs":{"evenness":"odd","num":"1"}},
             {"name":"odd-or-even[1]","item":"2","status":"succeeded","stdout":"a \"q\" {x}","outputs":{"num":"2","evenness":"even"}}]
            """#
        let printed = try Self.shell(script["source"] as? String ?? "", environment: environment)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [[String: String]], "\(printed)")
        #expect(list.map { $0["outputs.evenness"] } == ["odd", "even"], "\(printed)")
        #expect(list.map { $0["outputs.num"] } == ["1", "2"], "\(printed)")
        #expect(list.map { $0["index"] } == ["0", "1"], "\(printed)")
    }

    /// Argo fills in an item's keys apart from the other values: one `if:`
    /// reading both is refused, naming the split.
    @Test func anIfMixingTheItemAndOtherValuesIsRefused() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("""
            vars: { mode: full }
            groups:
              each:
                foreach: [a, b]
                task:
                  if: ${{ item == 'a' && vars.mode == 'full' }}
                  run: echo hi
            """, to: "mixed.yaml")
        let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.diagnostics.first?.hasPrefix("\(file):6:15: error: cannot export to Argo: 'if:' in a fan-out template reads 'item' and 'vars.mode'") == true, "\(run.diagnostics)")
    }

    static func shell(_ script: String, environment: [String: String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
