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
