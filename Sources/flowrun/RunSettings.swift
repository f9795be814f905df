import ArgumentParser
import FlowrunModel
import FlowrunPlanning
import FlowrunRecord
import FlowrunValues

/// What `flowrun [run]` and `flowrun resume` both accept about how a run
/// goes: one definition (`@OptionGroup`), so the two cannot drift apart —
/// a bound `run` enforces holds for `resume` too.
struct RunSettings: ParsableArguments {
    @Option(name: .customLong("var"), help: ArgumentHelp("Override a variable declared under vars: (repeatable).", valueName: "name=value"))
    var variables: [String] = []

    @Option(help: "Running tasks at once for the whole run (overrides max_parallel).")
    var maxParallel: Int?

    @Flag(help: "Let the first failure cancel everything still running (overrides fail_fast).")
    var failFast = false

    @Flag(help: "Start the targets named on the command line together, not one after another in the order given.")
    var parallel = false

    @Option(help: "auto: tty on a terminal, else plain; tty: live view; plain: one line per event; json: one JSON object per line (with --dry-run: the plan as JSON).")
    var output: RunCommand.OutputMode = .auto

    @Flag(help: "Show what tasks print as they print it: `task | line` for stdout, `task ! line` for stderr (plain and tty); with --output json, task_output events.")
    var stream = false

    @Flag(help: "Run every task, even those whose sources and generated files are up to date (ignores .flowrun/state).")
    var force = false

    @Flag(help: "Answer y to every prompt: of the tasks that run (without it, a run with a prompt needs a terminal to ask on).")
    var yes = false

    @Option(help: ArgumentHelp("The folder to make run folders in: DIR/RUN_ID (default: .flowrun/runs under the current directory; for resume, where the resumed run's record is). It must be yours (or root's) and not writable by others without the sticky bit.", valueName: "dir"))
    var logDir: String?

    @Option(help: ArgumentHelp("Run records to keep in the record folder, this run's included; older ones are removed as the run starts, never one still running.", valueName: "n"))
    var keep: Int = RecordPruning.defaultKeep

    func validate() throws {
        if let problem = choices.problem { throw ValidationError(problem) }
    }

    /// The same settings as plain values (what `FastCommandLine` fills in too).
    var choices: RunChoices {
        RunChoices(
            variables: variables, maxParallel: maxParallel, failFast: failFast, parallel: parallel, output: output,
            stream: stream, force: force, yes: yes, logDir: logDir, keep: keep)
    }

    var planOptions: PlanOptions { choices.planOptions }

    /// `--var` values as (name, value); `validate()` made sure each has a `=`.
    static func pairs(_ variables: [String]) -> [(String, String)] {
        variables.map { variable in
            let equals = variable.firstIndex(of: "=")!
            return (String(variable[..<equals]), String(variable[variable.index(after: equals)...]))
        }
    }
}
