import ArgumentParser
import FlowrunModel
import FlowrunLoading
import FlowrunPlanning

/// `flowrun validate [FILE...]`
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check workflow files and print every problem as FILE:LINE:COLUMN: error: MESSAGE.",
        discussion: "Exits 0 when every file is valid (warnings allowed), 2 when any file has an error."
    )

    @Argument(help: "Workflow files to check (default: ./flowrun.yaml or ./flowrun.yml, else the nearest parent folder's).", completion: .file(extensions: ["yaml", "yml"]))
    var files: [String] = []

    @Flag(name: .shortAndLong, help: "Print nothing for valid files.")
    var quiet = false

    func run() throws {
        try Self.check(files, quiet: quiet)
    }

    /// The check, from plain values (argument-parser's, or `FastCommandLine`'s).
    static func check(_ files: [String], quiet: Bool) throws {
        MallocTuning.keepLargeBlocksMapped()
        var errorCount = 0
        var warningCount = 0
        for file in files.isEmpty ? [try WorkflowFileLookup.resolve(nil)] : files {
            let result = WorkflowValidator.validate(path: file, includes: WorkflowTrust.includeSettings)
            Terminal.report(result.diagnostics, source: result.source)
            errorCount += result.diagnostics.filter { $0.severity == .error }.count
            warningCount += result.diagnostics.filter { $0.severity == .warning }.count
            if let workflow = result.workflow, !quiet {
                Terminal.standardOutput.write("\(file): valid (\(Self.summary(of: workflow)))\n")
            }
        }
        if errorCount > 0 {
            var counts = ["\(errorCount) error\(errorCount == 1 ? "" : "s")"]
            if warningCount > 0 { counts.append("\(warningCount) warning\(warningCount == 1 ? "" : "s")") }
            Terminal.standardError.write(counts.joined(separator: ", ") + "\n")
            throw ExitCode(2)
        }
    }

    static func summary(of workflow: Workflow) -> String {
        // A fan-out over `vars` is counted as a run counts it (with the file's values).
        var workflow = workflow
        Planner.sizeFanOutsKnownAtPlanning(&workflow)
        let fanOuts = workflow.groups.compactMap(\.fanOut)
        let taskCount = workflow.mainTaskCount + workflow.finally.count + fanOuts.compactMap(\.source.staticCount).reduce(0, +)
        var tasks = "\(taskCount) task\(taskCount == 1 ? "" : "s")"
        let dynamic = fanOuts.filter { $0.source.staticCount == nil }.count
        if dynamic > 0 { tasks += " + \(dynamic) fan-out\(dynamic == 1 ? "" : "s") sized at run time" }
        return "\(tasks), \(workflow.groups.count) group\(workflow.groups.count == 1 ? "" : "s"), \(workflow.joins.count) join\(workflow.joins.count == 1 ? "" : "s")"
    }
}
