import Foundation
import Testing

/// SPEC §11 on a cluster: the exported script reads each value from its
/// variable in the way its shell context needs, so a hostile value prints as
/// its text and runs nothing there too.
@Suite struct ExportShellContextTests {
    @Test func anExportedScriptReadsEachValueAsTextInItsContext() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("""
            tasks:
              up: { run: echo "v=x" >> "$FLOWRUN_OUTPUT" }
              use:
                needs: [up]
                run: |
                  printf '[%s]' ${{ tasks.up.outputs.v }} "src=${{ tasks.up.outputs.v }}" 'q ${{ tasks.up.outputs.v }}'
                  cat <<EOF
                  <${{ tasks.up.outputs.v }}>
                  EOF
            """, to: "contexts.yaml")
        let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
        #expect(run.exitStatus == 0, "\(run)")
        let documents = try ArgoManifest.documents(run.stdout)
        let templates = try #require((documents.first?["spec"] as? [String: Any])?["templates"] as? [[String: Any]])
        let use = try #require(templates.first { $0["name"] as? String == "use" })
        let source = try #require((use["script"] as? [String: Any])?["source"] as? String)
        // The user's script, as the wrapper writes it to a file.
        let script = try #require(source.components(separatedBy: "<<'FLOWRUN_SCRIPT'\n").last?.components(separatedBy: "\nFLOWRUN_SCRIPT\n").first)
        #expect(script.contains(#""src=${FLOWRUN_VALUE_1}" 'q '"${FLOWRUN_VALUE_1}"''"#), "\(script)")
        let sandbox = try TemporaryDirectory()
        let value = "a \"b\" 'c' $(touch pwned) `touch pwned` \\"
        let printed = try ExportItemConditionTests.shell("cd \(sandbox.path) && " + script, environment: ["FLOWRUN_VALUE_1": value])
        #expect(printed == "[\(value)][src=\(value)][q \(value)]<\(value)>\n", "\(printed)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path + "/pwned"))
    }
}
