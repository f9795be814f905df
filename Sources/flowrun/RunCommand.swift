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
            "The workflow file (when the first argument is an existing file or ends in .yaml/.yml; else ./flowrun.yaml or ./flowrun.yml, or the nearest parent folder's), then the targets: tasks, groups, joins or fan-out members to run with what they need (default: the file's default:, else everything).",
            valueName: "file-or-target"),
        completion: .file(extensions: ["yaml", "yml"]))
    var arguments: [String] = []

    @Flag(help: "Validate and print the plan (order, needs, limits, semaphores, timeouts, groups, joins); run nothing at all.")
    var dryRun = false

    @Option(name: .customLong("var"), help: ArgumentHelp("Override a variable declared under vars: (repeatable).", valueName: "name=value"))
    var variables: [String] = []

    @Option(help: "Running tasks at once for the whole run (overrides max_parallel).")
    var maxParallel: Int?

    @Option(name: .customLong("only"), help: ArgumentHelp("Run only this task, group, join or fan-out member and what it needs (repeatable; the same as naming it as a target).", valueName: "name"),
            completion: .custom(TaskNameCompletion.candidates))
    var only: [String] = []

    @Flag(help: "Let the first failure cancel everything still running (overrides fail_fast).")
    var failFast = false

    @Option(help: "auto: tty on a terminal, else plain; tty: live view; plain: one line per event; json: one JSON object per line (with --dry-run: the plan as JSON).")
    var output: OutputMode = .auto

    @Flag(help: "Show what tasks print as they print it: `task | line` for stdout, `task ! line` for stderr (plain and tty); with --output json, task_output events.")
    var stream = false

    @Flag(help: "Run every task, even those whose sources and generated files are up to date (ignores .flowrun/state).")
    var force = false

    @Option(help: ArgumentHelp("The folder to make run folders in: DIR/RUN_ID (default: .flowrun/runs under the current directory). It must be yours (or root's) and not writable by others without the sticky bit.", valueName: "dir"))
    var logDir: String?

    @Option(help: ArgumentHelp("Run records to keep in the record folder, this run's included; older ones are removed as the run starts, never one still running.", valueName: "n"))
    var keep: Int = RecordPruning.defaultKeep

    func validate() throws {
        for variable in variables where !variable.contains("=") || variable.hasPrefix("=") {
            throw ValidationError("--var takes name=value, found '\(variable)'")
        }
        // An empty path would put the record under `/`.
        if logDir?.isEmpty == true { throw ValidationError("--log-dir needs a folder, found an empty value") }
        if keep < 1 { throw ValidationError("--keep must be at least 1 (this run's record), found \(keep)") }
        if let maxParallel, maxParallel < 1 { throw ValidationError("--max-parallel must be at least 1, found \(maxParallel)") }
        if let maxParallel, maxParallel > NumericBounds.slots.upperBound {
            throw ValidationError("--max-parallel must be at most 1,000,000 (as max_parallel), found \(maxParallel)")
        }
    }

    func run() throws {
        var options = PlanOptions()
        options.variables = Self.pairs(variables)
        options.maxParallel = maxParallel
        options.failFast = failFast
        let (file, targets) = RunArguments.split(arguments)
        // Targets and --only are the same thing (SPEC §10).
        options.only = targets + only
        options.runsDefaultTargets = true
        // Before lookup moves into the found file's folder: a relative
        // --log-dir is relative to where the user typed it.
        let logDir = file == nil ? self.logDir.map(WorkflowFileLookup.absolute) : self.logDir
        let plan = try PlanLoader.load(WorkflowFileLookup.resolve(file), options: options).plan

        guard !dryRun else {
            Terminal.standardOutput.write(output == .json ? plan.json : plan.text)
            if output != .json { Terminal.standardOutput.write(IncrementalSetup.dryRunText(plan, force: force)) }
            return
        }
        var reuse = TaskReuse()
        reuse.store = IncrementalSetup.store(for: plan, force: force)
        try RunLauncher.run(consume plan, logDirectory: RunOptions(logDirectory: logDir).logDirectory, keep: keep, output: output, stream: stream, reuse: reuse)
    }

    /// `--var` values as (name, value); `validate()` made sure each has a `=`.
    static func pairs(_ variables: [String]) -> [(String, String)] {
        variables.map { variable in
            let equals = variable.firstIndex(of: "=")!
            return (String(variable[..<equals]), String(variable[variable.index(after: equals)...]))
        }
    }
}
