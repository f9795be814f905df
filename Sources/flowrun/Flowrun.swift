import ArgumentParser
import FlowrunEngine

/// `flowrun` — run, validate and plan declarative workflows.
@main
struct Flowrun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flowrun",
        abstract: "Run declarative workflows: tasks, groups, limits, semaphores, timeouts and joins.",
        usage: """
            flowrun [FILE] [TARGET...] [--dry-run] [--var <name=value>]... [--max-parallel <n>]
                         [--only <name>]... [--parallel] [--fail-fast] [--output <mode>] [--log-dir <dir>] [--keep <n>] [--stream] [--force]
                         [--yes] [-- WORD...]
            flowrun run [FILE] [TARGET...] [options]
            flowrun watch [FILE] [TARGET...] [run's options]
            flowrun validate [--quiet] [FILE...]
            flowrun graph [FILE] [--format dot|mermaid]
            flowrun list [FILE] [--output text|json]
            flowrun runs [-n <n>] [--output text|json] [--log-dir <dir>]
            flowrun show [RUN] [--output text|json] [--log-dir <dir>] [--trace <file>] [--timeline <file.svg>]
            flowrun logs [RUN] TASK [-f] [--log-dir <dir>]
            flowrun resume [RUN] [--from <name>]... [--dry-run] [run's options but --only]
            flowrun export FILE --to argo [--image <image>] [--namespace <ns>] [--template] [--strict] [-o <file>]
            """,
        discussion: """
            With no FILE, flowrun uses ./flowrun.yaml or ./flowrun.yml, else the nearest parent \
            folder's, and runs as if started in that folder (relative cwd: and the .flowrun/ record \
            are taken from there). The first argument is FILE when it ends in .yaml/.yml or holds a / and names a file \
            (a bare word naming a file is FILE only when there is no flowrun.yaml to look up, and \
            only if no other user could have written it: ./build names the file build); the rest \
            are targets: the tasks, groups, joins or fan-out members to run, with \
            what they need (none: the file's default:, else everything). `flowrun run` takes the same \
            arguments, for a target named like a subcommand.

            Running a workflow (the default command; `flowrun run --help` has more):
              --dry-run             validate and print the plan; run nothing at all
              --var <name=value>    override a variable declared under vars:
              --max-parallel <n>    running tasks at once for the whole run
              --only <name>         run only this target and its needs (as naming it)
              --parallel            start the targets together (default: one after
                                    another, in the order given; a failure stops the rest)
              --fail-fast           the first failure cancels everything running
              --output <mode>       auto, tty, plain or json (the plan, with --dry-run)
              --log-dir <dir>       the run record's folder (.flowrun/runs/RUN_ID)
              --keep <n>            run records to keep, this one included (default 50)
              --stream              print what tasks print as they print it: `task | line`
                                    for stdout, `task ! line` for stderr (json: task_output events)
              --force               run tasks with sources: even when they are up to date
              --yes                 answer y to every prompt: of the tasks that run
              -- WORD...            the words the named targets read as ${{ args }}

            Exit codes: 0 nothing failed, 1 something failed or timed out, 2 invalid \
            workflow or command line, 124 the run's timeout fired, 128+N a signal N \
            stopped the run.
            """,
        version: BuildInfo.versionText,
        subcommands: [RunCommand.self, WatchCommand.self, ValidateCommand.self, GraphCommand.self, ListCommand.self, ExportCommand.self, RunsCommand.self, ShowCommand.self, LogsCommand.self, ResumeCommand.self],
        defaultSubcommand: RunCommand.self
    )

    /// Prepares the process (descriptors 0-2, signals, limits), then parses
    /// and runs, mapping usage errors to exit 2 (SPEC §7) instead of
    /// ArgumentParser's 64.
    static func main() {
        // First: descriptors 0-2 open, SIGPIPE/SIGXFSZ ignored, the caller's
        // ignored signals and limits noted (inherited across the fork below).
        ProcessStartup.prepare()
        let arguments = PassedArguments.split.arguments
        // For a command line that may start a task, the pid the shell knows
        // becomes a supervisor and the run goes on in its child, the engine:
        // once the plan shows whether a task must start (`RunLauncher`), still on this one thread.
        if TaskStartingCommand.mayStartTasks(arguments.dropFirst()) { Supervisor.splitLater() }
        do {
            if let script = CompletionScript.requested(by: arguments) {
                Terminal.standardOutput.write(script)
                Terminal.exitIfOutputFailed()
                Terminal.exit(0)
            }
            if let message = CommandSuggestion.message(for: arguments), !RunArguments.isTargetOfFoundWorkflow(arguments[1]) {
                Terminal.standardError.write(message + "\n")
                Terminal.exit(2)
            }
            if let fast = FastCommandLine.command(arguments.dropFirst()), !FastCommandLine.isTurnedOff {
                try fast()
            } else {
                var command = try parseAsRoot(Array(arguments.dropFirst()))
                try command.run()
            }
            Terminal.exitIfOutputFailed()
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // Help, --version, completion candidates: through Terminal, so a failed write fails.
                let text = fullMessage(for: error)
                if !text.isEmpty { Terminal.standardOutput.write(text + "\n") }
                Terminal.exitIfOutputFailed()
                Terminal.exit(0)
            }
            if code == .validationFailure {
                Terminal.standardError.write(ArgumentEcho.escaped(fullMessage(for: error)) + "\n")
                Terminal.exit(2)
            }
            // A message that echoes a typed argument ("Unknown option '--x'")
            // goes out escaped; help and --version print as ArgumentParser prints them.
            if !code.isSuccess {
                let message = ArgumentEcho.escaped(fullMessage(for: error))
                if !message.isEmpty { Terminal.standardError.write(message + "\n") }
                Terminal.exit(code.rawValue)
            }
            exit(withError: error)
        }
    }
}
