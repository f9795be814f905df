import ArgumentParser
import FlowrunModel
import FlowrunLoading
import FlowrunPlanning

/// The front half every command shares: validate the file (diagnostics to
/// stderr) and plan it, or exit 2.
enum PlanLoader {
    /// The plan, and the file's text for diagnostics found later.
    static func load(_ file: String, options: PlanOptions = PlanOptions()) throws -> (plan: Plan, source: SourceText) {
        MallocTuning.keepLargeBlocksMapped()
        let result = WorkflowValidator.validate(path: file)
        let hasErrors = Terminal.report(result.diagnostics, source: result.source)
        guard let workflow = result.workflow, !hasErrors else { throw ExitCode(2) }
        do {
            return (try Planner.plan(workflow, options: options), result.source)
        } catch {
            Terminal.standardError.write("flowrun: \(error.message)\n")
            throw ExitCode(2)
        }
    }
}
