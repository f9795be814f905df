import ArgumentParser
import FlowrunRecord
import FlowrunReporting

/// `flowrun show [RUN] [--output text|json] [--log-dir DIR] [--trace FILE] [--timeline FILE.svg]`
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one run from its record: statuses, join blocks and failures with their last lines; a live run as it stands now.",
        discussion: """
            RUN is a run id, a unique prefix of one, or `latest`; without it, the latest run. \
            A prefix that matches several runs is an error that lists them. \
            With --trace or --timeline, show writes those files instead of printing the run.
            """
    )

    enum Output: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Argument(help: ArgumentHelp("A run id, a unique prefix of one, or latest (default: the latest run).", valueName: "run"))
    var runArgument: String?

    @Option(help: "text: for people; json: one object with the run, its tasks, groups, joins and failures.")
    var output: Output = .text

    @OptionGroup var location: RecordLocation

    @OptionGroup var timeline: TimelineOptions

    func run() throws {
        let history = try location.history()
        if timeline.isRequested {
            let id = try reported { () throws(RunHistory.Problem) in try history.resolve(runArgument) }
            try timeline.write(runFolder: history.folderPath(id))
            return
        }
        let recorded = try reported { () throws(RunHistory.Problem) in
            try RecordedRun.read(history.resolve(runArgument), in: history)
        }
        let view = RecordedRunView(run: recorded, history: history)
        Terminal.standardOutput.write(output == .json ? view.json : view.text)
    }
}
