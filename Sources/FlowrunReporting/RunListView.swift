package import FlowrunRecord
import FlowrunValues
/// `flowrun runs`: recent runs, newest first, one line each, or a JSON array.
///
///     RUN                                  STARTED              DURATION  OUTCOME    WORKFLOW  TASKS
///     20261125-153252.204816-4f1c09a2b7d3  2026-11-25 15:32:52  3.21s     failed     ci        3 succeeded, 1 failed
package enum RunListView {
    package static func text(_ runs: [RecordedRun]) -> String {
        let rows = runs.map { run -> [String] in
            [
                run.id,
                run.startTime.map(RecordedRunView.localTime) ?? "unknown",
                run.duration.map(PlainReporter.seconds) ?? "",
                run.outcome,
                TerminalText.escaped(run.workflow ?? ""),
                RecordedRunView.countsText(run),
            ]
        }
        let header = ["RUN", "STARTED", "DURATION", "OUTCOME", "WORKFLOW", "TASKS"]
        var widths = header.map { TerminalText.width($0) }
        for row in rows {
            for column in 0..<(header.count - 1) { widths[column] = min(40, max(widths[column], TerminalText.width(row[column]))) }
        }
        var out = ""
        for row in [header] + rows {
            var line = ""
            for column in 0..<header.count {
                line += column == header.count - 1 ? row[column] : TerminalText.fitted(row[column], to: widths[column]) + "  "
            }
            while line.hasSuffix(" ") { line.removeLast() }
            out += line + "\n"
        }
        return out
    }

    /// An array of `{run_id, state, outcome, workflow, file, started, duration, exit_code, stopped_by, counts, record}`.
    package static func json(_ runs: [RecordedRun]) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (position, run) in runs.enumerated() {
            bytes += position == 0 ? "\n".utf8 : ",\n".utf8
            bytes += RecordedRunView.headJSON(run).finish()
        }
        bytes += "\n]\n".utf8
        return String(decoding: bytes, as: UTF8.self)
    }
}
