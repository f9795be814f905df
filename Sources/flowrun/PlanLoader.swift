import ArgumentParser
import FlowrunModel
import FlowrunLoading
import FlowrunPlanning

/// The front half every command shares: validate the file (diagnostics to
/// stderr) and plan it, or exit 2.
enum PlanLoader {
    /// The plan, and the file's text for diagnostics found later.
    /// `startsRun`: a run (or its dry run) is planned, which reads the
    /// file's `dotenv:` into the environment first and asks its prompts.
    static func load(_ file: String, options: PlanOptions = PlanOptions(), startsRun: Bool = false) throws -> (plan: Plan, source: SourceText) {
        MallocTuning.keepLargeBlocksMapped()
        let result = WorkflowValidator.validate(path: file, includes: WorkflowTrust.includeSettings)
        let hasErrors = Terminal.report(result.diagnostics, source: result.source)
        guard let workflow = result.workflow, !hasErrors else { throw ExitCode(2) }
        if startsRun, !workflow.dotenv.isEmpty { try DotenvSetup.apply(workflow) }
        do {
            return (try Planner.plan(workflow, options: options), result.source)
        } catch {
            Terminal.standardError.write("flowrun: \(error.message)\n")
            throw ExitCode(2)
        }
    }
}
