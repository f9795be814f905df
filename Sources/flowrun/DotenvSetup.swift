import ArgumentParser
import FlowrunModel
import FlowrunLoading
#if canImport(Glibc)
import Glibc
#endif

/// `dotenv:` (SPEC §15) as a run starts: each variable the files set that
/// the caller's environment does not is set in flowrun's own, before the
/// plan is made — so `${{ env.X }}`, `secrets:` and every task see it, the
/// caller's value wins, and a task's or the workflow's `env:` wins over both.
enum DotenvSetup {
    static func apply(_ workflow: Workflow) throws {
        let loaded = DotenvLoader.load(workflow.dotenv, workflowFile: workflow.file)
        // Problems sit in the workflow file (a missing file) or in a dotenv file (its lines): no source lines shown.
        if Terminal.report(loaded.diagnostics, source: SourceText(file: workflow.file, bytes: [])) { throw ExitCode(2) }
        for (name, value) in loaded.values where getenv(name) == nil {
            setenv(name, value, 0)
        }
    }
}
