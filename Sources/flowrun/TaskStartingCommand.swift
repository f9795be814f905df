/// Whether a command line may start a task, read from the words alone
/// before anything else runs: only then does flowrun split into supervisor
/// and engine (`Supervisor.split`, a fork of a ~20 MB process), which a
/// `validate` in a pre-commit hook, `list`, `--version` or a shell's
/// completion call has no task to guard with.
///
/// It errs one way: a command line it cannot place is taken to start tasks
/// (a run, `resume`, anything argument-parser might read as one).
enum TaskStartingCommand {
    /// The subcommands that never start a task (read the record, check or print a workflow).
    static let startsNone = ["validate", "graph", "list", "export", "runs", "show", "logs", "help"]

    /// `arguments` without the program's name and without the words after
    /// a run's `--` (`PassedArguments`).
    static func mayStartTasks(_ arguments: ArraySlice<String>) -> Bool {
        guard let first = arguments.first else { return true }
        if startsNone.contains(first) { return false }
        // Printed by argument-parser before any command runs.
        if first == "--version" || first == "--help" || first == "-h" || first.hasPrefix("---completion")
            || first.hasPrefix("--generate-completion-script") || first.hasPrefix("--experimental-dump-help") {
            return false
        }
        // `flowrun [run|resume] … --dry-run …` plans and prints: no option
        // takes `--dry-run` as its value (a value never starts with `--`).
        return !arguments.contains("--dry-run")
    }
}
