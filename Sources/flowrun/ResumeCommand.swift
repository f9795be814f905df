import ArgumentParser
import FlowrunModel
import FlowrunValues
import FlowrunPlanning
import FlowrunEvents
import FlowrunRecord
import FlowrunEngine
import FlowrunReporting
#if canImport(Glibc)
import Glibc
#endif

/// `flowrun resume [RUN]` — runs a failed, timed-out or interrupted run
/// again in a new record that links the old one, restoring what succeeded.
struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Run a failed or interrupted run again, restoring the tasks that succeeded (their stashes from its record).",
        discussion: """
            RUN is a run id, a unique prefix of one, or omitted for the latest run. The run's \
            workflow file is read again, from the folder the run ran in. A task is restored (not \
            run) when it succeeded and everything it needs is restored; its identity (a hash of \
            its resolved definition) must be unchanged, or resume refuses (exit 2) and names it. \
            finally tasks always run. Pass the same --var values as the run had. Only a run of your \
            own is resumed, and only when the workflow lookup would trust its workflow file: yours \
            (or root's), writable by no one else, in a folder no other user may write, or one listed \
            in FLOWRUN_TRUSTED_DIRS (SECURITY.md).
            """
    )

    @Argument(help: ArgumentHelp("The run to resume: an id, a unique prefix of one, or nothing for the latest.", valueName: "run"))
    var runName: String?

    @Option(name: .customLong("from"), help: ArgumentHelp("Run this task, group, join or fan-out member and everything downstream of it again (repeatable).", valueName: "name"))
    var from: [String] = []

    @Flag(help: "Print what would be restored and what would run; run nothing.")
    var dryRun = false

    @OptionGroup var settings: RunSettings

    func run() throws {
        // Absolute: the record is read again (whole stdouts) after moving to where the run ran.
        let found = RecordLocation.foundFolder()
        let folder = found == "." ? WorkflowFileLookup.currentDirectory() : found
        let base = WorkflowFileLookup.absolute(settings.logDir ?? (folder == "/" ? "" : folder) + "/.flowrun/runs")
        let old: ResumeSource
        do {
            let history = try settings.logDir == nil ? RunHistory(recordIn: folder) : RunHistory(path: base)
            old = try ResumeSource.read(history.resolve(runName), in: history)
        } catch {
            Terminal.standardError.write("flowrun: \(error)\n")
            throw ExitCode(2)
        }
        if old.exitCode == 0 && from.isEmpty {
            Terminal.standardOutput.write("run \(old.runID) (\(old.workflow)) succeeded: nothing to resume (--from NAME runs a task and what follows it again)\n")
            return
        }
        // Where the run ran: relative cwd:, sources and the workflow file mean the same again.
        if let cwd = old.cwd, chdir(cwd) != 0 {
            Terminal.standardError.write("flowrun: cannot resume \(old.runID): cannot enter \(cwd), where it ran: \(String(cString: strerror(errno)))\n")
            throw ExitCode(2)
        }
        let workflowFile = old.workflowPath ?? old.file
        if let problem = WorkflowOwnership.problem(workflowFile) {
            Terminal.standardError.write("flowrun: cannot resume \(old.runID): \(problem)\n")
            throw ExitCode(2)
        }
        var options = settings.planOptions
        options.only = old.only
        let plan = try PlanLoader.load(workflowFile, options: options, startsRun: true).plan

        let identities = TaskIdentities.compute(for: plan)
        let selection: ResumeSelection
        do {
            selection = try ResumeSelection.select(plan: plan, identities: identities, old: old, from: from)
        } catch {
            Terminal.standardError.write("flowrun: \(error)\n")
            throw ExitCode(2)
        }
        guard selection.changed.isEmpty else {
            var message = "flowrun: cannot resume \(old.runID): the workflow changed under tasks that succeeded and would be restored:\n"
            for entry in selection.changed {
                message += "  \(TerminalText.escapedName(entry.name)): \(Self.describe(entry.changes))\n"
            }
            message += "Run them again with --from NAME, or start a fresh run.\n"
            Terminal.standardError.write(message)
            throw ExitCode(2)
        }
        if dryRun {
            let names = selection.restored.keys.sorted()
            Terminal.standardOutput.write("resume \(old.runID): \(names.count) task\(names.count == 1 ? "" : "s") restored, the rest runs\n"
                + names.map { "  restored  \(TerminalText.escapedName($0))\n" }.joined())
            return
        }
        var reuse = TaskReuse()
        reuse.restored = selection.restored
        reuse.resumedFrom = old.runID
        reuse.store = IncrementalSetup.store(for: plan, force: settings.force)
        try TaskPrompts.ask(plan, yes: settings.yes)
        try RunLauncher.run(
            consume plan, logDirectory: base, keep: settings.keep, output: settings.output, stream: settings.stream, reuse: reuse,
            identities: identities)
    }

    /// `run`, `env` → "its run script and environment changed".
    static func describe(_ changes: [String]) -> String {
        if changes == ["not recorded"] { return "its identity is not in the old record (written by an older flowrun)" }
        let words: [String: String] = [
            "run": "run script", "sleep": "sleep", "http": "http request", "env": "environment", "cwd": "cwd",
            "shell": "shell", "when": "when/if", "sources": "sources/generates", "needs": "needs (or a task it needs)",
            "item": "item", "members": "members", "foreach": "foreach", "need": "need",
        ]
        let named = changes.map { words[$0] ?? $0 }
        return named.isEmpty ? "its definition changed" : "its " + named.joined(separator: ", ") + " changed"
    }
}
