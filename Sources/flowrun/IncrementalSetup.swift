import FlowrunModel
import FlowrunValues
import FlowrunPlanning
import FlowrunEvents
import FlowrunRecord
import FlowrunEngine
import FlowrunReporting

/// `.flowrun/state` for a run: opened only when some task has `sources:`,
/// and not with `--force`.
enum IncrementalSetup {
    static func hasIncrementalTasks(_ plan: Plan) -> Bool {
        (plan.steps + plan.finallySteps).contains { $0.task.map { !$0.sources.isEmpty } ?? false }
    }

    static func store(for plan: Plan, force: Bool) -> IncrementalStore? {
        guard !force, hasIncrementalTasks(plan) else { return nil }
        switch IncrementalStore.open(workflowFile: plan.workflow.file) {
        case .success(let store): return store
        case .failure(let refusal):
            Terminal.standardError.write("flowrun: warning: not using .flowrun/state (every task runs): \(refusal)\n")
            return nil
        }
    }

    /// The dry run's last section: which incremental tasks are up to date.
    static func dryRunText(_ plan: Plan, force: Bool) -> String {
        guard hasIncrementalTasks(plan) else { return "" }
        if force { return "\nIncremental: --force runs every task\n" }
        guard let store = store(for: plan, force: false) else { return "" }
        let lines = IncrementalPreview.lines(plan, store: store)
        guard !lines.isEmpty else { return "" }
        return "\nIncremental (sources:):\n" + lines.map { "  " + $0 + "\n" }.joined()
    }
}
