import ArgumentParser
import FlowrunEngine

/// `flowrun` — run, validate and plan declarative workflows.
@main
struct Flowrun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flowrun",
        abstract: "Run declarative workflows: tasks, groups, limits, semaphores, timeouts and joins.",
        usage: """
            flowrun [FILE] [--dry-run] [--var <name=value>]... [--max-parallel <n>]
                         [--only <name>]... [--fail-fast] [--output <mode>] [--log-dir <dir>] [--stream]
            flowrun validate [--quiet] [FILE...]
            flowrun graph [FILE] [--format dot|mermaid]
            flowrun list [FILE] [--output text|json]
            flowrun export FILE --to argo [--image <image>] [--namespace <ns>] [--template] [--strict] [-o <file>]
            """,
        discussion: """
            With no FILE, flowrun uses ./flowrun.yaml or ./flowrun.yml, else the nearest parent \
            folder's, and runs as if started in that folder (relative cwd: and the .flowrun/ record \
            are taken from there).

            Running a workflow (the default command; `flowrun run --help` has more):
              --dry-run             validate and print the plan; run nothing at all
              --var <name=value>    override a variable declared under vars:
              --max-parallel <n>    running tasks at once for the whole run
              --only <name>         run only this task, group or join and its needs
              --fail-fast           the first failure cancels everything running
              --output <mode>       auto, tty, plain or json (the plan, with --dry-run)
              --log-dir <dir>       the run record's folder (.flowrun/runs/RUN_ID)
              --stream              print what tasks print as they print it: `task | line`
                                    for stdout, `task ! line` for stderr (json: task_output events)

            Exit codes: 0 nothing failed, 1 something failed or timed out, 2 invalid \
            workflow or command line, 124 the run's timeout fired, 128+N a signal N \
            stopped the run.
            """,
        version: "0.1.0",
        subcommands: [RunCommand.self, ValidateCommand.self, GraphCommand.self, ListCommand.self, ExportCommand.self],
        defaultSubcommand: RunCommand.self
    )

    /// Prepares the process (descriptors 0-2, signals, limits), then parses
    /// and runs, mapping usage errors to exit 2 (SPEC §7) instead of
    /// ArgumentParser's 64.
    static func main() {
        // First: descriptors 0-2 open, SIGPIPE/SIGXFSZ ignored, the caller's
        // ignored signals and limits noted (inherited across the fork below).
        ProcessStartup.prepare()
        // Then, while single-threaded: the pid the shell knows becomes a
        // supervisor, and everything below runs in its child, the engine.
        Supervisor.split()
        do {
            if let message = CommandSuggestion.message(for: CommandLine.arguments) {
                Terminal.standardError.write(message + "\n")
                Terminal.exit(2)
            }
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                Terminal.standardError.write(fullMessage(for: error) + "\n")
                Terminal.exit(2)
            }
            exit(withError: error)
        }
    }
}
