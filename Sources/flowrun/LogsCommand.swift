import ArgumentParser
import FlowrunRecord
import FlowrunReporting

/// `flowrun logs [RUN] TASK [-f] [--log-dir DIR]`
struct LogsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logs",
        abstract: "Print one task's log from a run's record; with -f, follow it while the run goes on.",
        usage: "flowrun logs [RUN] TASK [-f] [--log-dir <dir>]",
        discussion: """
            RUN is a run id, a unique prefix of one, or `latest`; without it, the latest run. The log \
            is found through the record (summary.json, or the task's task_started event in a live \
            run), never guessed from the name. On a terminal each line is shown with control characters \
            escaped (as --stream does); into a pipe or a file the log's bytes go out as they are. \
            With -f, flowrun prints what the task adds as it adds it (woken by inotify) and exits when \
            the task ends, or when the run does; a task that has not started yet is waited for (a run that ends without it exits 1).
            """
    )

    @Argument(help: ArgumentHelp("RUN, then TASK: with one word, the task of the latest run.", valueName: "run-or-task"),
              completion: .custom(TaskNameCompletion.recordedCandidates))
    var first: String

    @Argument(help: ArgumentHelp("The task, when RUN came first.", valueName: "task"),
              completion: .custom(TaskNameCompletion.recordedCandidates))
    var second: String?

    @Flag(name: [.short, .customLong("follow")], help: "Keep printing what the task adds while the run goes on; exit when the task (or the run) ends.")
    var follow = false

    @OptionGroup var location: RecordLocation

    func run() throws {
        let (runArgument, task) = second.map { (Optional(first), $0) } ?? (nil, first)
        let history = try location.history()
        let recorded = try reported { () throws(RunHistory.Problem) in
            try RecordedRun.read(history.resolve(runArgument), in: history)
        }
        let shown = RecordedRun.shown(task)
        let known = recorded.task(named: task)
        if known == nil {
            let hint = recorded.suggestion(for: task)
            // A live run knows only the tasks that started so far: -f waits for the one named
            // (`fetch[7]` may not have started while `fetch[6]` runs), the hint only noted.
            guard follow, recorded.state == .running else {
                let scope = recorded.state == .running ? " (so far)" : ""
                Terminal.standardError.write("flowrun: no task '\(shown)' in run \(recorded.id)\(scope)\(hint)\n")
                throw ExitCode(2)
            }
            Terminal.standardError.write("flowrun: '\(shown)' has not started yet in run \(recorded.id); waiting for it (Ctrl-C to stop)\(hint)\n")
        }
        let printer = LogPrinter(escapes: Terminal.standardOutput.isTerminal)
        // `logs TASK > /dev/full` fails as every command that prints does.
        defer { if let failure = printer.failure { Terminal.noteOutputFailure(failure) } }
        let reader = TaskLogReader(history: history, runID: recorded.id, task: task, logFile: known?.logFile) { printer.print($0) }
        if follow && recorded.state == .running {
            reader.follow()
            printer.finish()
            if !reader.taskStarted && known == nil {
                Terminal.standardError.write("flowrun: run \(recorded.id) ended before '\(shown)' started\n")
                throw ExitCode(1)
            }
            return
        }
        let hadLog = reader.copyLog()
        printer.finish()
        if let problem = reader.openProblem {
            Terminal.standardError.write("flowrun: \(problem)\n")
            throw ExitCode(1)
        }
        if !hadLog, let known {
            let why = RecordedRun.whyNoLog(known)
            Terminal.standardError.write("flowrun: '\(shown)' \(why) in run \(recorded.id)\n")
        }
    }
}
