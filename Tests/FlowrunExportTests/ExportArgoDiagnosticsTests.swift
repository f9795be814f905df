@testable import FlowrunModel
@testable import FlowrunPlanning
@testable import FlowrunExport
import FlowrunTestSupport
import Testing

/// What Argo cannot express is refused at the line that asks for it, and
/// `--strict` turns every emulation into an error.
@Suite struct ExportArgoDiagnosticsTests {
    @Test func refusalsNameTheOffendingPosition() throws {
        let marked = MarkedText("""
            tasks:
              a: { run: "true" }
              b: { needs: [a, g], run: "echo ${{ ¹tasks.a.duration }} ${{ ²groups.g.results }}" }
              c: { run: "docker inspect --format '{{.Id}}' x" }
            groups:
              g:
                tasks: { m: { run: "true" } }
            """)
        let diagnostics = try ArgoGolden.diagnostics(marked.text)
        #expect(diagnostics == [
            "\(marked[1]): error: cannot export to Argo: 'tasks.a.duration': Argo does not give a task's duration to other tasks",
            "\(marked[2]): error: cannot export to Argo: 'groups.g.results': Argo gathers results only from a fan-out; group 'g' has static members (read each member's outputs instead)",
            "test.yaml:4:13: error: cannot export to Argo: the script contains '{{', which Argo would read as one of its own variables",
        ])
    }

    @Test func strictTurnsEveryEmulationIntoAnError() throws {
        let yaml = """
            semaphores: { net: 2 }
            tasks:
              a: { semaphores: { net: 2 }, sleep: 1s..2s }
            """
        #expect(try ArgoGolden.diagnostics(yaml).allSatisfy { $0.contains(": warning: emulated on Argo: ") })
        var strict = ArgoExportOptions()
        strict.strict = true
        let errors = try ArgoGolden.diagnostics(yaml, options: strict)
        #expect(errors == [
            "test.yaml:3:3: error: --strict: Argo cannot wait a random time without a pod: this sleep runs as a pod that sleeps 1s..2s",
            "test.yaml:3:22: error: --strict: Argo semaphores have no weights: pool 'net' (capacity 2) gets 1 slots of weight 1, and tasks with a weight above 1 also hold 'net.weighted' (capacity 1), so the pool never exceeds 2 but runs fewer light tasks",
        ])
        let plan = try Planner.plan(try workflow(yaml))
        #expect(ArgoExport.export(plan, options: strict).manifest == nil)
    }

    /// The words after `--` become workflow parameters: `args` one word however many it
    /// holds, `args[N]` one of its own, each declared once however often it is read.
    @Test func wordsAfterDashDashBecomeWorkflowParameters() throws {
        let yaml = """
            tasks:
              a: { run: "echo ${{ args }} ${{ args[1] }} ${{ args[1] }}" }
            """
        var planning = PlanOptions()
        planning.fillsArguments = false  // as `flowrun export` plans: the compiler sees `args`
        let export = ArgoExport.export(try Planner.plan(try workflow(yaml), options: planning), options: ArgoExportOptions())
        #expect(export.diagnostics.map(\.description) == [
            "test.yaml:2:23: warning: emulated on Argo: 'args' is the words after -- on a flowrun command line, which an Argo submit does not have: it becomes the workflow parameter 'args' (empty unless submitted with -p args=VALUE), one word however many it holds",
            "test.yaml:2:35: warning: emulated on Argo: 'args[1]' is a word after -- on a flowrun command line, which an Argo submit does not have: it becomes the workflow parameter 'args-1' (empty unless submitted with -p args-1=VALUE)",
            "test.yaml:2:50: warning: emulated on Argo: 'args[1]' is a word after -- on a flowrun command line, which an Argo submit does not have: it becomes the workflow parameter 'args-1' (empty unless submitted with -p args-1=VALUE)",
        ])
        let manifest = try #require(export.manifest)
        #expect(manifest.components(separatedBy: "- name: args-1\n").count == 2, "\(manifest)")
        #expect(manifest.components(separatedBy: "- name: args\n").count == 2, "\(manifest)")
    }

    @Test func anExactWorkflowPassesStrict() throws {
        var strict = ArgoExportOptions()
        strict.strict = true
        #expect(try ArgoGolden.diagnostics("""
            tasks:
              a: { run: echo "k=v" >> "$FLOWRUN_OUTPUT", timeout: 5s, retries: 1 }
              b: { needs: [a], when: always, run: "echo ${{ tasks.a.outputs.k }}" }
            """, options: strict) == [])
    }

    @Test func namesBecomeArgoNamesWithoutClashes() {
        var names = ArgoNames(reserving: ["main"])
        #expect(names.name(for: "main") == "main-2")
        #expect(names.name(for: "step_2") == "step-2")
        #expect(names.name(for: "step.2") == "step-2-2")
        #expect(names.name(for: "_x") == "x")
        #expect(names.name(for: "step_2") == "step-2")
        #expect(ArgoNames.objectName("Nightly_Sync") == "nightly-sync")
    }
}
