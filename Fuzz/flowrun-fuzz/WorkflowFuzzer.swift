import FlowrunModel
import FlowrunLoading
import FlowrunPlanning

/// Runs raw bytes through the whole front end — load, validate, plan, render —
/// and traps when an invariant that holds for any input is broken.
///
/// libFuzzer calls it once per input (`LibFuzzerEntry.swift`); the ordinary
/// build calls it once per file given on the command line (`Replay.swift`).
/// Any crash, trap or hang inside is a bug in flowrun: bad input must end as
/// diagnostics, never as a crash.
enum WorkflowFuzzer {
    /// The file name the input pretends to have (it also becomes the default workflow name).
    static let file = "fuzz.yaml"

    /// What one input produced, for the replay tool's summary line.
    struct Outcome {
        var diagnostics: [String] = []
        var planText: String?
    }

    @discardableResult
    static func exercise(_ bytes: [UInt8]) -> Outcome {
        let result = WorkflowValidator.validate(bytes: bytes, file: file)
        let diagnostics = result.diagnostics

        // A workflow comes back exactly when nothing is an error: no silent
        // rejection, no accepted file with errors.
        check((result.workflow == nil) == diagnostics.hasErrors, "workflow returned \(result.workflow != nil), errors \(diagnostics.hasErrors)")
        for diagnostic in diagnostics {
            check(diagnostic.location.line >= 1 && diagnostic.location.column >= 1, "diagnostic outside the file: \(diagnostic)")
            check(!diagnostic.message.isEmpty, "empty diagnostic message at \(diagnostic.location)")
        }
        check(diagnostics == diagnostics.sortedByPosition(), "diagnostics not sorted by position")

        // What `flowrun validate` prints, on a terminal and off one.
        let terminal = DiagnosticRenderer(showsSourceLines: true, usesColor: true)
        let plain = DiagnosticRenderer(showsSourceLines: false, usesColor: false)
        for diagnostic in diagnostics {
            sink(terminal.render(diagnostic, lines: result.source.lines))
            sink(plain.render(diagnostic, lines: []))
        }

        var outcome = Outcome(diagnostics: diagnostics.map(\.description))
        guard let workflow = result.workflow else { return outcome }
        // Planning a valid workflow cannot fail, neither as it is nor with
        // command-line options that name what the file declares.
        outcome.planText = render(makePlan(workflow, PlanOptions()))
        render(makePlan(workflow, overrides(for: workflow)))
        return outcome
    }

    /// What `--var`, `--only`, `--max-parallel 1` and `--fail-fast` would pass
    /// for this workflow: every variable overridden, the last declared step selected.
    static func overrides(for workflow: Workflow) -> PlanOptions {
        var options = PlanOptions()
        options.variables = workflow.vars.map { ($0.name, "it's a \"${{ vars.\($0.name) }}\"\n") }
        let names = workflow.tasks.map(\.name) + workflow.groups.map(\.name) + workflow.joins.map(\.name)
        options.only = names.last.map { [$0] } ?? []
        options.maxParallel = 1
        options.failFast = true
        return options
    }

    static func makePlan(_ workflow: Workflow, _ options: PlanOptions) -> Plan {
        do {
            return try Planner.plan(workflow, options: options)
        } catch {
            fail("planning a valid workflow failed: \(error)")
        }
    }

    /// `--dry-run` and `--dry-run --output json`; returns the text.
    @discardableResult
    static func render(_ plan: Plan) -> String {
        checkOrder(plan.steps)
        checkOrder(plan.finallySteps)
        let text = plan.text
        sink(text)
        let json = plan.json
        // `Plan.json` falls back to "{}" when encoding throws (e.g. a NaN or an infinity).
        check(json != "{}\n", "the plan did not encode as JSON")
        sink(json)
        return text
    }

    /// Every step is planned once, in a later stage than each step of the
    /// same phase it waits for ("stage N starts once earlier stages settled").
    static func checkOrder(_ steps: [PlanStep]) {
        var stageByName: [String: Int] = [:]
        for step in steps {
            check(stageByName.updateValue(step.stage, forKey: step.name) == nil, "step '\(step.name)' is planned twice")
        }
        for step in steps {
            for need in step.needs {
                guard let needStage = stageByName[need] else { continue }
                check(needStage < step.stage, "'\(step.name)' (stage \(step.stage)) waits for '\(need)' (stage \(needStage))")
            }
        }
    }

    /// Traps with a message libFuzzer and the replay tool both show.
    static func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() { fail(message()) }
    }

    static func fail(_ message: String) -> Never {
        fatalError("flowrun-fuzz invariant: \(message)")
    }

    /// Keeps a rendering from being optimised away without printing it.
    @inline(never)
    static func sink(_ text: String) {
        if text.utf8.count == Int.max { print(text) }
    }
}
