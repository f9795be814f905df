import FlowrunValues
import FlowrunEvents

/// A join's block as lines (SPEC §5), the one renderer the tty view and the
/// plain output share:
///
///     all succeeded: 9/9 succeeded (9 needed) after 1.20s
///         ✓ fetch[0] a.txt  0.31s  size=12  stdout: hello a
///         ✗ fetch[1] b.txt  failed (allowed), 0.20s
///         ⊘ slow  not needed
///         ✓ build  1.02s  version=1.4
///           │ compiled 12 files
///           │ linked flowrun
///         … and 980 more: 975 succeeded, 5 not needed
///         see: .flowrun/runs/RUN/joins/all.json
///
/// Every line fits `columns`; a value cut to fit (or members left out)
/// adds the `see:` line naming the file that holds the report whole.
enum JoinBlock {
    /// Members shown before the rest are counted.
    static let memberLimit = 20
    /// Up to this many members, a member's stdout gets `valueLines` lines; beyond, one.
    static let roomyMembers = 10
    static let valueLines = 3

    /// The head (`all succeeded: 9/9 …`, to follow a prefix such as `join `) and the member lines.
    static func lines(_ report: JoinReport, columns: Int) -> (head: String, details: [StyledLine]) {
        let width = max(20, columns - 1)
        let outcome = report.timedOut ? "timed out" : report.status.rawValue.replacingAll("_", with: " ")
        let head = "\(report.name) \(outcome): \(report.succeeded)/\(report.counted) succeeded (\(report.required) needed) after \(PlainReporter.seconds(report.duration))"
        var details: [StyledLine] = []
        var cut = false
        if !report.missing.isEmpty {
            let line = StyledLine("    missing: " + report.missing.map(TerminalText.sanitized).joined(separator: ", "), .warning)
            details += wrapped(line, width: width, indent: "             ")
        }
        let shown = report.members.count > memberLimit + 4 ? memberLimit : report.members.count
        let stdoutLines = shown > roomyMembers ? 1 : valueLines
        for member in report.members.prefix(shown) {
            details += memberLines(member, width: width, stdoutLines: stdoutLines, cut: &cut)
        }
        if shown < report.members.count {
            let counts = report.outcomeCounts(of: report.members[shown...]).map { "\($0.count) \($0.outcome.text)" }
            details.append(StyledLine("    … and \(report.members.count - shown) more: " + counts.joined(separator: ", "), .dim))
            cut = true
        }
        if cut, let path = report.path {
            details.append(StyledLine("    see: " + PathText.shortened(path, to: width - 9), .dim))
        }
        return (head, details)
    }

    /// `✓ fetch[0] a.txt  0.31s  size=12  stdout: hello a`, and a multi-line stdout's last lines below.
    private static func memberLines(_ member: JoinReport.Member, width: Int, stdoutLines: Int, cut: inout Bool) -> [StyledLine] {
        let role = self.role(of: member.outcome)
        var row = StyledLine("    " + symbol(of: member.outcome) + " ", role)
        row.append(TerminalText.sanitized(member.label), member.outcome == .succeeded ? .plain : .bold)
        var facts: [String] = []
        if member.outcome != .succeeded { facts.append(member.outcome.text) }
        if let duration = member.duration, member.outcome != .notNeeded, member.outcome != .missing, member.outcome != .stillRunning {
            facts.append(PlainReporter.seconds(duration))
        }
        if !facts.isEmpty { row.append("  " + facts.joined(separator: ", "), member.outcome == .succeeded ? .dim : role) }
        // Each value gets at most half the width, so one long value cannot hide the others.
        let valueWidth = max(12, width / 2)
        var below: [String] = []
        for value in member.values {
            if value.isStdout {
                var lines = value.text.split(separator: "\n", omittingEmptySubsequences: true).map { TerminalText.sanitized(String($0)) }
                if lines.isEmpty { continue }
                // Crowded (more than `roomyMembers`): one row a member, stdout's last line cut to fit.
                if lines.count == 1 && row.width + 10 + TerminalText.width(lines[0]) <= width || stdoutLines == 1 {
                    if lines.count > 1 { cut = true }
                    lines = [lines[lines.count - 1]]
                    row.append("  stdout: ", .dim)
                    row.append(lines[0])
                    continue
                }
                if lines.count > stdoutLines {
                    cut = true
                    below.append("… \(lines.count - stdoutLines) more line\(lines.count - stdoutLines == 1 ? "" : "s")")
                    lines = Array(lines.suffix(stdoutLines))
                }
                below += lines
            } else {
                let text = TerminalText.sanitized(value.text.replacingAll("\n", with: "⏎"))
                let shortened = shorten(text, to: valueWidth, cut: &cut)
                row.append("  " + TerminalText.sanitized(value.key) + "=", .dim)
                row.append(shortened)
            }
        }
        var result = [fitted(row, width: width, cut: &cut)]
        for line in below {
            var styled = StyledLine("      │ ", .dim)
            styled.append(line, line.hasPrefix("… ") ? .dim : .plain)
            result.append(fitted(styled, width: width, cut: &cut))
        }
        return result
    }

    /// `text`, cut to `columns` columns with a `…` when longer.
    private static func shorten(_ text: String, to columns: Int, cut: inout Bool) -> String {
        guard TerminalText.width(text) > columns else { return text }
        cut = true
        return TerminalText.truncated(text, to: columns)
    }

    /// The line cut to `width` columns (the last one a `…`), noting the cut.
    private static func fitted(_ line: StyledLine, width: Int, cut: inout Bool) -> StyledLine {
        guard line.width > width else { return line }
        cut = true
        var result = StyledLine()
        var remaining = width - 1
        for span in line.spans where remaining > 0 {
            let spanWidth = TerminalText.width(span.text)
            if spanWidth <= remaining {
                result.append(span.text, span.role)
                remaining -= spanWidth
            } else {
                result.append(String(TerminalText.truncated(span.text, to: remaining + 1).dropLast()), span.role)
                remaining = 0
            }
        }
        result.append("…", .dim)
        return result
    }

    /// `line` broken into rows of at most `width` columns, the later ones
    /// starting with `indent`: for what must be read whole (a failure's reason).
    static func wrapped(_ line: StyledLine, width: Int, indent: String) -> [StyledLine] {
        guard line.width > width, width > TerminalText.width(indent) + 8 else { return [line] }
        var rows: [StyledLine] = []
        var current = StyledLine()
        var used = 0
        for span in line.spans {
            var rest = Substring(span.text)
            while !rest.isEmpty {
                let room = width - used
                var taken = Substring()
                var takenWidth = 0
                var index = rest.startIndex
                while index < rest.endIndex {
                    let characterWidth = TerminalText.width(of: rest[index])
                    if takenWidth + characterWidth > room { break }
                    takenWidth += characterWidth
                    index = rest.index(after: index)
                }
                taken = rest[..<index]
                // Break after a space when there is one in the second half of the row.
                if index < rest.endIndex, let space = taken.lastIndex(of: " "), taken.distance(from: taken.startIndex, to: space) > taken.count / 2 {
                    taken = rest[...space]
                    takenWidth = TerminalText.width(taken)
                } else if index < rest.endIndex, takenWidth < 12, used > TerminalText.width(indent) {
                    // A short piece left at the row's end: the row ends before it instead.
                    taken = rest[..<rest.startIndex]
                    takenWidth = 0
                }
                current.append(String(taken), span.role)
                used += takenWidth
                rest = rest[taken.endIndex...]
                if !rest.isEmpty || used >= width {
                    rows.append(current)
                    current = StyledLine(indent, .dim)
                    used = TerminalText.width(indent)
                    rest = rest.drop { $0 == " " }
                }
            }
        }
        if current.spans.contains(where: { !$0.text.trimmingSpaces.isEmpty }) { rows.append(current) }
        return rows
    }

    static func symbol(of outcome: JoinReport.Outcome) -> String {
        switch outcome {
        case .succeeded: return "✓"
        case .failed, .timedOut, .failedAllowed: return "✗"
        case .cancelled, .notNeeded: return "⊘"
        case .skipped: return "-"
        case .missing, .stillRunning: return "◌"
        }
    }

    static func role(of outcome: JoinReport.Outcome) -> TextRole {
        switch outcome {
        case .succeeded: return .success
        case .failed, .timedOut: return .failure
        case .failedAllowed, .missing: return .warning
        case .cancelled, .notNeeded, .skipped, .stillRunning: return .dim
        }
    }
}

private extension String {
    var trimmingSpaces: Substring {
        let start = firstIndex { $0 != " " } ?? endIndex
        return self[start...]
    }
}
