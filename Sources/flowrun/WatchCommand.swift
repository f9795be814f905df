import ArgumentParser
import FlowrunModel
import FlowrunPlanning
import FlowrunEngine

/// `flowrun watch [FILE] [TARGET...]` — run, then run again what changed, until Ctrl-C (SPEC §14).
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Run the targets, then watch their sources: a change runs again exactly the tasks whose sources changed and what depends on them, until Ctrl-C.",
        discussion: """
            Every folder the sources: globs of the targets and their needs can match is watched \
            with inotify, folders made later included. A burst of writes is one change; a file \
            counts once written and closed. Files matched by generates:, and .flowrun/, never \
            count. A change during a run stops the affected tasks that are running and the next \
            run starts them again. Each run is a run of its own in `flowrun runs`, saying which \
            file it is for. Services (service: true) keep running between runs, and are started \
            again only when their own sources changed. Ctrl-C stops everything, services \
            included. A fan-out (foreach, matrix) is watched through its template's sources: filled in \
            per item (or, for items only the run knows, everything under the globs' folder before \
            their first ${{); a change runs the group again, each member decided again (only those \
            whose sources changed run, the rest are up_to_date), then what needs the group. A join \
            whose members run again runs again, its report printed again.
            """
    )

    @Argument(
        help: ArgumentHelp(
            "The workflow file (found as for a run), then the targets to run and watch (default: the file's default:, else everything).",
            valueName: "file-or-target"),
        completion: .file(extensions: ["yaml", "yml"]))
    var arguments: [String] = []

    @OptionGroup var settings: RunSettings

    func run() throws {
        var options = settings.planOptions
        let (file, targets) = try RunArguments.split(arguments)
        options.only = targets
        options.runsDefaultTargets = true
        options.arguments = PassedArguments.split.passed
        options.requiresVariables = true
        let logDir = file == nil ? settings.logDir.map(WorkflowFileLookup.absolute) : settings.logDir
        let plan = try PlanLoader.load(WorkflowFileLookup.resolve(file), options: options, startsRun: true).plan
        if !IncrementalSetup.hasIncrementalTasks(plan) {
            Terminal.standardError.write("flowrun watch: no task of the targets has sources:, so no change would run anything again; add sources: globs\n")
            throw ExitCode(2)
        }
        try TaskPrompts.ask(plan, yes: settings.yes)
        var reuse = TaskReuse()
        reuse.store = IncrementalSetup.store(for: plan, force: settings.force)
        try RunLauncher.run(
            consume plan, logDirectory: RunOptions(logDirectory: logDir).logDirectory, keep: settings.keep, output: settings.output,
            stream: settings.stream, reuse: reuse, watch: true)
    }
}
