import ArgumentParser
import FlowrunModel
import FlowrunPlanning
import FlowrunEvents
import FlowrunRecord
import FlowrunEngine
import FlowrunReporting

/// `flowrun [FILE] [TARGET...] [--dry-run] …` — the default command.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a workflow file, or the named targets and what they need (or, with --dry-run, print the plan and run nothing)."
    )

    enum OutputMode: String, ExpressibleByArgument, CaseIterable {
        case auto, tty, plain, json
    }

    @Argument(
        help: ArgumentHelp(
            "The workflow file (when the first argument ends in .yaml/.yml or holds a / and names a file, or, with no flowrun.yaml to look up, names a file that passes the lookup's trust check; else ./flowrun.yaml or ./flowrun.yml, or the nearest parent folder's), then the targets: tasks, groups, joins or fan-out members to run with what they need (default: the file's default:, else everything).",
            valueName: "file-or-target"),
        completion: .file(extensions: ["yaml", "yml"]))
    var arguments: [String] = []

    @Flag(help: "Validate and print the plan (order, needs, limits, semaphores, timeouts, groups, joins); run nothing at all.")
    var dryRun = false

    @Option(name: .customLong("only"), help: ArgumentHelp("Run only this task, group, join or fan-out member and what it needs (repeatable; the same as naming it as a target).", valueName: "name"),
            completion: .custom(TaskNameCompletion.candidates))
    var only: [String] = []

    @OptionGroup var settings: RunSettings

    func run() throws {
        try Self.run(arguments: arguments, dryRun: dryRun, only: only, settings: settings.choices)
    }

    /// The run, from plain values (argument-parser's, or `FastCommandLine`'s).
    static func run(arguments: [String], dryRun: Bool, only: [String], settings: RunChoices) throws {
        var options = settings.planOptions
        let (file, targets) = try RunArguments.split(arguments)
        // Targets and --only are the same thing (SPEC §10).
        options.only = targets + only
        options.runsDefaultTargets = true
        options.arguments = PassedArguments.split.passed
        options.requiresVariables = true
        // Before lookup moves into the found file's folder: a relative
        // --log-dir is relative to where the user typed it.
        let logDir = file == nil ? settings.logDir.map(WorkflowFileLookup.absolute) : settings.logDir
        let plan = try PlanLoader.load(WorkflowFileLookup.resolve(file), options: options, startsRun: true).plan

        guard !dryRun else {
            Terminal.standardOutput.write(settings.output == .json ? plan.json : plan.text)
            if settings.output != .json { Terminal.standardOutput.write(IncrementalSetup.dryRunText(plan, force: settings.force)) }
            return
        }
        try TaskPrompts.ask(plan, yes: settings.yes)
        var reuse = TaskReuse()
        reuse.store = IncrementalSetup.store(for: plan, force: settings.force)
        try RunLauncher.run(
            consume plan, logDirectory: RunOptions(logDirectory: logDir).logDirectory, keep: settings.keep, output: settings.output,
            stream: settings.stream, reuse: reuse)
    }
}
