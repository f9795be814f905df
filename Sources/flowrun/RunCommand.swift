import ArgumentParser
import FlowrunModel
import FlowrunPlanning
import FlowrunEvents
import FlowrunRecord
import FlowrunEngine
import FlowrunReporting

/// `flowrun [FILE] [--dry-run] …` — the default command.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a workflow file (or, with --dry-run, print its plan and run nothing)."
    )

    enum OutputMode: String, ExpressibleByArgument, CaseIterable {
        case auto, tty, plain, json
    }

    @Argument(help: "The workflow file (default: ./flowrun.yaml or ./flowrun.yml, else the nearest parent folder's).", completion: .file(extensions: ["yaml", "yml"]))
    var file: String?

    @Flag(help: "Validate and print the plan (order, needs, limits, semaphores, timeouts, groups, joins); run nothing at all.")
    var dryRun = false

    @Option(name: .customLong("var"), help: ArgumentHelp("Override a variable declared under vars: (repeatable).", valueName: "name=value"))
    var variables: [String] = []

    @Option(help: "Running tasks at once for the whole run (overrides max_parallel).")
    var maxParallel: Int?

    @Option(name: .customLong("only"), help: ArgumentHelp("Run only this task, group or join and what it needs (repeatable).", valueName: "name"))
    var only: [String] = []

    @Flag(help: "Let the first failure cancel everything still running (overrides fail_fast).")
    var failFast = false

    @Option(help: "auto: tty on a terminal, else plain; tty: live view; plain: one line per event; json: one JSON object per line (with --dry-run: the plan as JSON).")
    var output: OutputMode = .auto

    @Flag(help: "Show what tasks print as they print it: `task | line` for stdout, `task ! line` for stderr (plain and tty); with --output json, task_output events.")
    var stream = false

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
        options.variables = variables.map { variable in
            let equals = variable.firstIndex(of: "=")!
            return (String(variable[..<equals]), String(variable[variable.index(after: equals)...]))
        }
        options.maxParallel = maxParallel
        options.failFast = failFast
        options.only = only
        // Before lookup moves into the found file's folder: a relative
        // --log-dir is relative to where the user typed it.
        let logDir = file == nil ? self.logDir.map(WorkflowFileLookup.absolute) : self.logDir
        let plan = try PlanLoader.load(WorkflowFileLookup.resolve(file), options: options).plan

        guard !dryRun else {
            Terminal.standardOutput.write(output == .json ? plan.json : plan.text)
            return
        }
        let runOptions = RunOptions(logDirectory: logDir)
        let record: RunRecord
        do {
            record = try RunRecord(baseDirectory: runOptions.logDirectory)
        } catch {
            Terminal.standardError.write("flowrun: \(error)\n")
            throw ExitCode(2)
        }
        record.markLatest()
        for problem in record.pruneOlderRecords(keeping: keep) {
            Terminal.standardError.write("flowrun: pruning old run records: \(problem)\n")
        }
        let reporter: any RunReporter
        // The live view's rows show each running task's latest line: it hears every line on a terminal.
        var hearsLines = stream
        switch output {
        case .json: reporter = JSONLinesReporter()
        case .plain: reporter = PlainReporter()
        // Not on a terminal, `tty` prints the view's lasting lines (finished
        // tasks, join blocks, summary) with no live region and no escapes.
        case .tty, .auto:
            if output == .auto && !Terminal.standardOutput.showsLiveView {
                reporter = PlainReporter()
            } else {
                let live = LiveTerminalReporter(streams: stream)
                hearsLines = hearsLines || live.drawsRegion
                reporter = live
            }
        }
        // Handed over (`consume`): the engine keeps the only copy, without the workflow's own definitions.
        let engine = RunEngine(plan: (consume plan).forRunning(), record: record, reporters: [reporter], streamsOutput: hearsLines)
        let outcome = engine.run()
        // The console's last lines, waited for a bounded time only (a reader
        // that stalls must not hold the exit), and the count of lines dropped.
        ConsoleWriter.settle()
        // Out at once: freeing every node, and ArgumentParser describing an
        // ExitCode, is a millisecond or two nobody waits for.
        withExtendedLifetime(engine) { Terminal.exit(outcome.exitCode) }
    }
}
