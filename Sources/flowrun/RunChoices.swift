import FlowrunModel
import FlowrunPlanning
import FlowrunRecord
import FlowrunValues

/// How a run goes, as plain values: what `RunSettings` parsed, or what
/// `FastCommandLine` read from a common command line without
/// argument-parser. The run reads these, never the property wrappers.
struct RunChoices {
    var variables: [String] = []
    var maxParallel: Int?
    var failFast = false
    var parallel = false
    var output: RunCommand.OutputMode = .auto
    var stream = false
    var force = false
    var yes = false
    var logDir: String?
    var keep: Int = RecordPruning.defaultKeep

    /// What is wrong with these values (argument-parser shows it as a
    /// usage error), or nil.
    var problem: String? {
        for variable in variables where !variable.contains("=") || variable.hasPrefix("=") {
            return "--var takes name=value, found '\(TerminalText.escaped(variable))'"
        }
        // An empty path would put the record under `/`.
        if logDir?.isEmpty == true { return "--log-dir needs a folder, found an empty value" }
        if keep < 1 { return "--keep must be at least 1 (this run's record), found \(keep)" }
        if let maxParallel, maxParallel < 1 { return "--max-parallel must be at least 1, found \(maxParallel)" }
        if let maxParallel, maxParallel > NumericBounds.slots.upperBound {
            return "--max-parallel must be at most 1,000,000 (as max_parallel), found \(maxParallel)"
        }
        return nil
    }

    /// The plan options these settings give (`only` and the rest are the caller's).
    var planOptions: PlanOptions {
        var options = PlanOptions()
        options.variables = RunSettings.pairs(variables)
        options.maxParallel = maxParallel
        options.failFast = failFast
        options.parallelTargets = parallel
        return options
    }
}
