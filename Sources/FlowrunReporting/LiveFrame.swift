import FlowrunValues

/// The live region as lines, from the state alone: a pure function, so what
/// the terminal shows is tested without a terminal.
///
///     ⠹ downloads  12.4s · 10 running · 71 waiting · 19/101 done
///       file-20  [██████░░░░]  60%   1.3s
///       file-21  [███░░░░░░░]  30%   0.6s  attempt 2
///       … and 3 more running
///       ◌ 71 waiting for group downloads: file-30, file-31, file-32, …
///       ↻ file-7  attempt 2 in 0.8s
///
/// Lines are not cut here; `TerminalStyle.render` cuts each to the width.
/// The layout is: one header line, the running tasks in the order they
/// started, then what waits. When the region would be taller than `rows`
/// allows, running tasks are cut to the first ones and "… and N more".
enum LiveFrame {
    static let spinner = Array("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
    /// Kinds of waiting shown, each on one line; the rest are summed up.
    static let waitingKinds = 3
    static let retryLines = 3

    /// - Parameters:
    ///   - now: run-elapsed seconds.
    ///   - columns: the terminal's width (for the progress bar's size).
    ///   - rows: the most lines the region may take.
    ///   - tick: the spinner's frame.
    static func lines(_ state: LiveState, now: Double, columns: Int, rows: Int, tick: Int = 0) -> [StyledLine] {
        guard state.started, !state.finished else { return [] }
        var header = self.header(state, now: now, tick: tick, compact: false)
        // A narrow terminal gets the short words rather than a cut count.
        if header.width > columns - 1 { header = self.header(state, now: now, tick: tick, compact: true) }

        // What waits takes at most half of the region; running tasks get the rest.
        let waitingLines = Array(self.waitingLines(state, now: now).prefix(max(1, (rows - 1) / 2)))
        let budget = max(1, rows - 1 - waitingLines.count)
        var running = state.running.values.sorted { $0.serial < $1.serial }
        var hidden = 0
        if running.count > budget {
            hidden = running.count - (budget - 1)
            running = Array(running.prefix(budget - 1))
        }
        let nameWidth = min(running.map { TerminalText.width($0.name) }.max() ?? 0, max(8, columns / 2 - 4))
        let barWidth = columns >= 60 ? 10 : columns >= 44 ? 6 : 0
        var lines = [header]
        for task in running {
            lines.append(runningLine(task, now: now, nameWidth: nameWidth, barWidth: barWidth, state: state))
        }
        if hidden > 0 { lines.append(StyledLine("  … and \(hidden) more running", .dim)) }
        return lines + waitingLines
    }

    /// `⠹ downloads  12.4s · 10 running · 71 waiting · 19/101 done`, or
    /// `compact`: `⠹ downloads 12.4s · 10 run · 71 wait · 19/101`; while a
    /// fan-out sized at run time is going, `19 done, more coming` (`19 done+`).
    static func header(_ state: LiveState, now: Double, tick: Int, compact: Bool) -> StyledLine {
        var header = StyledLine(String(spinner[tick % spinner.count]) + " ", .accent)
        header.append(state.workflow.isEmpty ? "run" : TerminalText.escaped(state.workflow), .bold)
        header.append("  " + clock(now))
        header.append(" · ", .dim)
        header.append("\(state.running.count) \(compact ? "run" : "running")")
        if !state.waiting.isEmpty || !state.retrying.isEmpty {
            header.append(" · ", .dim)
            header.append("\(state.waiting.count + state.retrying.count) \(compact ? "wait" : "waiting")")
        }
        header.append(" · ", .dim)
        if state.totalIsKnown {
            header.append("\(state.finishedTasks)/\(state.totalTasks)\(compact ? "" : " done")")
        } else {
            // A fan-out still reading its items: no total to show yet.
            header.append("\(state.finishedTasks) done\(compact ? "+" : ", more coming")")
        }
        if state.failedTasks > 0 {
            header.append(" · ", .dim)
            header.append("\(state.failedTasks) failed", .failure)
        }
        return header
    }

    /// `  file-20  [██████░░░░]  60%   1.3s  attempt 2`
    static func runningLine(_ task: LiveState.Running, now: Double, nameWidth: Int, barWidth: Int, state: LiveState? = nil) -> StyledLine {
        var line = StyledLine("  " + TerminalText.fitted(task.name, to: nameWidth) + "  ")
        if barWidth > 0 {
            let filled = task.progress.map { min(barWidth, max(0, $0 * barWidth / 100)) } ?? 0
            line.append("[", .dim)
            line.append(String(repeating: "█", count: filled), .accent)
            line.append(String(repeating: "░", count: barWidth - filled), .dim)
            line.append("] ", .dim)
        }
        line.append(TerminalText.padded(left: task.progress.map { "\($0)%" } ?? "", to: 4))
        line.append("  " + TerminalText.padded(left: clock(max(0, now - task.started)), to: 6), .dim)
        if task.attempt > 1 { line.append("  attempt \(task.attempt)", .warning) }
        // A service: what its dependents wait for, then that they need not.
        if let probe = task.probe { line.append(task.ready ? "  ready" : "  starting (probe \(TerminalText.sanitized(probe)))", task.ready ? .success : .dim) }
        if let slurm = task.slurm { line.append("  " + slurm, .accent) }
        // The task's latest line of output, dimmed (cut to the width by the screen).
        if let latest = state?.latestOutput[task.name] { line.append("  " + latest, .dim) }
        return line
    }

    /// One line per kind of thing waited on (`◌ 71 waiting for group
    /// downloads: file-30, …`, or the whole `waiting_on` for a single task),
    /// then tasks backing off before a retry.
    static func waitingLines(_ state: LiveState, now: Double) -> [StyledLine] {
        var lines: [StyledLine] = []
        let kinds = state.waitingLines.map { (key: $0.key, count: $0.value.count, first: state.firstWaiting(on: $0.key, limit: 1).first?.serial ?? 0) }
            .sorted { $0.first < $1.first }
        for kind in kinds.prefix(waitingKinds) {
            let first = state.firstWaiting(on: kind.key, limit: 3)
            var line = StyledLine("  ◌ ", .warning)
            if kind.count == 1, let only = first.first {
                line.append(only.name, .bold)
                line.append("  waiting for " + TerminalText.escaped(only.waitingOn.joined(separator: ", ")), .dim)
            } else {
                line.append("\(kind.count) waiting", .bold)
                line.append(" for \(TerminalText.escaped(kind.key)): ", .dim)
                line.append(first.map(\.name).joined(separator: ", ") + (kind.count > first.count ? ", …" : ""))
            }
            lines.append(line)
        }
        if kinds.count > waitingKinds {
            let rest = kinds.dropFirst(waitingKinds).reduce(0) { $0 + $1.count }
            lines.append(StyledLine("  … and \(rest) more waiting", .dim))
        }
        let retrying = state.retrying.values.sorted { $0.serial < $1.serial }
        for task in retrying.prefix(retryLines) {
            var line = StyledLine("  ↻ ", .warning)
            line.append(task.name, .bold)
            line.append("  attempt \(task.attempt) in \(clock(max(0, task.due - now)))", .dim)
            lines.append(line)
        }
        if retrying.count > retryLines {
            lines.append(StyledLine("  … and \(retrying.count - retryLines) more retrying", .dim))
        }
        return lines
    }

    /// `0.4s`, `12.4s`, `2m05s`, `1h02m`: elapsed time at a glance.
    static func clock(_ seconds: Double) -> String {
        if seconds < 60 {
            let tenths = Int((seconds * 10).rounded(.down))
            return "\(tenths / 10).\(tenths % 10)s"
        }
        let whole = Int(seconds)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        if whole < 3600 { return "\(whole / 60)m\(two(whole % 60))s" }
        return "\(whole / 3600)h\(two(whole % 3600 / 60))m"
    }
}
