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
        for variable in variables where !variable.contains("=") || variable.hasPrefix("=") {
            throw ValidationError("--var takes name=value, found '\(TerminalText.escaped(variable))'")
        }
        // An empty path would put the record under `/`.
        if logDir?.isEmpty == true { throw ValidationError("--log-dir needs a folder, found an empty value") }
        if keep < 1 { throw ValidationError("--keep must be at least 1 (this run's record), found \(keep)") }
        if let maxParallel, maxParallel < 1 { throw ValidationError("--max-parallel must be at least 1, found \(maxParallel)") }
        if let maxParallel, maxParallel > NumericBounds.slots.upperBound {
            throw ValidationError("--max-parallel must be at most 1,000,000 (as max_parallel), found \(maxParallel)")
        }
    }

    /// The plan options these settings give (`only` and the rest are the caller's).
    var planOptions: PlanOptions {
        var options = PlanOptions()
        options.variables = Self.pairs(variables)
        options.maxParallel = maxParallel
        options.failFast = failFast
        options.parallelTargets = parallel
        return options
    }

    /// `--var` values as (name, value); `validate()` made sure each has a `=`.
    static func pairs(_ variables: [String]) -> [(String, String)] {
        variables.map { variable in
            let equals = variable.firstIndex(of: "=")!
            return (String(variable[..<equals]), String(variable[variable.index(after: equals)...]))
        }
    }
}
