import ArgumentParser
import FlowrunRecord
import FlowrunReporting

/// `flowrun runs [-n N] [--output text|json] [--log-dir DIR]`
struct RunsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runs",
        abstract: "List recent runs from their records, newest first: id, start, duration, outcome, workflow and task counts.",
        discussion: """
            A run still going shows as `running`; one whose flowrun was killed as `killed` (exit \
            128+N); one with neither a summary nor a record of the kill as `did not finish`. --output json prints an array of {run_id, state, outcome, \
            workflow, file, started, duration, exit_code, stopped_by, counts, record} (docs/RUNNING.md).
            """
    )

    enum Output: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(name: [.customShort("n"), .customLong("count")], help: "How many runs to list, newest first.")
    var count = 20

    @Option(help: "text: aligned columns for a terminal; json: an array of runs.")
    var output: Output = .text

    @OptionGroup var location: RecordLocation

    func validate() throws {
        if count < 1 { throw ValidationError("-n must be at least 1, found \(count)") }
    }

    func run() throws {
        let history = try location.history()
        let ids = history.runIDs().suffix(count).reversed()
        let runs = ids.compactMap { id in try? RecordedRun.read(id, in: history, detail: .head) }
        if output == .json {
            Terminal.standardOutput.write(RunListView.json(runs))
        } else if runs.isEmpty {
            Terminal.standardError.write("flowrun: no runs recorded in \(history.path) yet\n")
        } else {
            Terminal.standardOutput.write(RunListView.text(runs))
        }
    }
}
