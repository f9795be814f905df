import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues
package import FlowrunEvents

/// `--output plain`: one line per event with a timestamp, stable and easy to
/// grep; a join's block when it completes; the summary at the end.
package final class PlainReporter: RunReporter, @unchecked Sendable {
    // @unchecked: called only on the engine's serial queue.
    private let output: LineWriter
    /// Values longer than this are shortened on screen (whole in the run record).
    private let valueWidth = 200
    /// Join blocks fit this width: the terminal's, or 80 when not a terminal.
    private let columns: Int
    /// The first 100 failures are listed at the end, the rest counted.
    private var failures = FailedTasks(limit: 100)
    /// Members joins cancelled once they had what they needed: "not needed", not failures.
    private var notNeeded = NameSample()
    /// Joins that failed: the members they cancelled were not "not needed".
    private var joinEnds: [String: ReasonText.JoinEnd] = [:]
    private var slowest: [(name: String, duration: Double)] = []
    /// Tasks that succeeded without running: restored, up to date.
    private var reused = ReusedTally()

    package init(descriptor: Int32 = 1) {
        output = LineWriter(descriptor: descriptor) { Self.commonLine($0) ?? "" }
        columns = isatty(descriptor) == 1 ? TerminalSize.of(descriptor).columns : 80
    }

    package func report(_ event: RunEvent) {
        if Self.commonWord(event) != nil {
            if event.kind == .taskFinished, let duration = event.duration { noteDuration(event.subject ?? "", duration) }
            output.write(event: event)
            return
        }
        var lines: [String] = []
        let stamp = Self.clock(event.timestamp)
        let name = TerminalText.escapedName(event.subject ?? "")
        switch event.kind {
        case .runStarted:
            let tasks = event.members ?? 0
            let unsized = event.sizedAtRunTime?.count ?? 0
            // The words `validate` and `--dry-run` use for a fan-out whose items only a run has.
            let more = unsized > 0 ? " + \(unsized) fan-out\(unsized == 1 ? "" : "s") sized at run time" : ""
            lines.append("\(stamp) run      \(TerminalText.escaped(event.workflow ?? "")) started (\(tasks) task\(tasks == 1 ? "" : "s")\(more), record \(TerminalText.escaped(event.path ?? "")))")
        case .taskWaiting, .taskStarted, .taskOutput:
            break  // always `commonLine`'s
        case .taskProgress:
            lines.append("\(stamp) progress \(name) \(event.progress ?? 0)%")
        case .taskRetrying:
            let why = event.reason.map { " (\(TerminalText.escaped($0)))" } ?? ""
            lines.append("\(stamp) retry    \(name): \(event.status?.rawValue ?? "failed")\(why), attempt \(event.attempt ?? 2) in \(Self.seconds(event.delay ?? 0))")
        case .taskFinished:
            lines += taskFinished(event, stamp: stamp)
        case .groupFinished:
            // A foreach that could not be read or named fails the group before any member: say why.
            let why = event.reason.flatMap { $0.hasPrefix("foreach: ") ? ": " + TerminalText.escaped($0) : nil } ?? ""
            lines.append("\(stamp) group    \(name) \(event.status?.rawValue ?? "") (\(event.succeeded ?? 0)/\(event.members ?? 0) succeeded, \(Self.seconds(event.duration ?? 0)))\(why)")
        case .joinCompleted:
            joinEnds[name] = ReasonText.JoinEnd(event)
            if let report = event.joinReport {
                let block = JoinBlock.lines(report, columns: columns)
                lines += ["\(stamp) join     \(block.head)"] + block.details.map(\.description)
            } else {
                let block = Self.joinBlock(event, valueWidth: valueWidth)
                lines += ["\(stamp) join     \(block.head)"] + block.details
            }
        case .runFinished:
            lines += summary(event, stamp: stamp)
        }
        output.write(lines.joined(separator: "\n") + "\n")
    }

    package func finish() {
        output.finish()
    }

    /// `build | compiling foo.c`, `build ! warning: …` for stderr — one
    /// write per line, so lines never mix; control characters escaped (a
    /// task's bytes must not forge a line).
    package func output(task: String, line: String, isError: Bool) {
        output.write(TerminalText.escapedName(task) + (isError ? " ! " : " | ") + TerminalText.escaped(line) + "\n")
    }

    /// The line of a task's start, wait or first-attempt success, built by
    /// appending: there are a few per task, and interpolation and arrays
    /// showed at 100,000 tasks. Nil for any other event.
    /// The word of an event that `commonLine` prints, nil for the others.
    private static func commonWord(_ event: RunEvent) -> String? {
        switch event.kind {
        case .taskStarted: " start    "
        case .taskWaiting: " waiting  "
        case .taskFinished where event.status == .succeeded && (event.attempt ?? 0) == 1: " ok       "
        default: nil
        }
    }

    private static func commonLine(_ event: RunEvent) -> String? {
        guard let word = commonWord(event) else { return nil }
        var line = ""
        line.reserveCapacity(64)
        ClockText.appendTime(event.timestamp, local: true, to: &line)
        line += word
        line += TerminalText.escapedName(event.subject ?? "")
        switch event.kind {
        case .taskWaiting:
            line += ": "
            for (position, what) in (event.waitingOn ?? []).enumerated() {
                if position > 0 { line += ", " }
                line += TerminalText.escaped(what)
            }
        case .taskFinished:
            if let duration = event.duration {
                line += " ("
                line += seconds(duration)
                line += ")"
            }
        case .taskStarted:
            if let attempt = event.attempt, attempt > 1 {
                line += " (attempt "
                line += String(attempt)
                line += ")"
            }
        default:
            break
        }
        line += "\n"
        return line
    }

    /// Keeps the three slowest tasks, slowest first (not every task's duration).
    private func noteDuration(_ name: String, _ duration: Double) {
        guard slowest.count < 3 || duration > slowest[2].duration else { return }
        let position = slowest.firstIndex { duration > $0.duration } ?? slowest.count
        slowest.insert((TerminalText.escapedName(name), duration), at: position)
        if slowest.count > 3 { slowest.removeLast() }
    }

    private func taskFinished(_ event: RunEvent, stamp: String) -> [String] {
        let name = TerminalText.escapedName(event.subject ?? "")
        let status = event.status ?? .failed
        var details: [String] = []
        // A cancelled task's exit code and signal are what stopping it did: the reason says it.
        if status != .cancelled {
            if let code = event.exitCode, status != .succeeded { details.append("exit \(code)") }
            if let signal = event.signal { details.append("signal \(signal)") }
        }
        if let reason = event.reason, status != .succeeded, !details.contains(reason) {
            details.append(TerminalText.escaped(ReasonText.describe(reason, cancelledBy: event.cancelledBy, joinEnd: event.cancelledBy.flatMap { joinEnds[$0] })))
        }
        if let duration = event.duration, event.attempt ?? 0 > 0 { details.append(Self.seconds(duration)) }
        if (event.attempt ?? 0) > 1 { details.append("\(event.attempt!) attempts") }
        let allowed = event.allowed == true
        if allowed { details.insert("allowed", at: 0) }
        // Every word 8 columns wide, so names line up whatever the status.
        let word: String
        switch status {
        case .succeeded: word = event.reused == ReuseKind.upToDate.rawValue ? "uptodate" : event.reused == ReuseKind.restored.rawValue ? "restored" : "ok      "
        case .failed: word = allowed ? "failed  " : "FAILED  "
        case .timedOut: word = "TIMEOUT "
        case .cancelled: word = "cancel  "
        default: word = status.rawValue.padding(to: 8)
        }
        var lines = ["\(stamp) \(word) \(name)" + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")]
        reused.note(event)
        if let duration = event.duration, event.attempt ?? 0 > 0 { noteDuration(event.subject ?? "", duration) }
        if ReasonText.isNotNeeded(event, joinEnd: event.cancelledBy.flatMap { joinEnds[$0] }) {
            notNeeded.add(name)
        }
        if status == .failed || status == .timedOut {
            let tail = (event.logTail ?? []).map(TerminalText.escaped)
            failures.append(FailedTask(name: name, path: event.path.map(TerminalText.escaped), tail: tail, allowed: allowed))
            for line in tail { lines.append("    | " + line) }
            if let path = event.path { lines.append("    log: \(TerminalText.escaped(path))") }
        }
        return lines
    }

    /// A join's block (SPEC §5), shared with the live view: the head line
    /// (`page-ready timed out: 2/3 succeeded (3 needed) after 2.0s`), then
    /// indented lines for the missing members and each reported value,
    /// values longer than `valueWidth` shortened (whole in the run record).
    static func joinBlock(_ event: RunEvent, valueWidth: Int) -> (head: String, details: [String]) {
        let name = TerminalText.escapedName(event.subject ?? "")
        let outcome = event.timedOut == true ? "timed out" : event.status?.rawValue ?? ""
        let head = "\(name) \(outcome): \(event.succeeded ?? 0)/\(event.members ?? 0) succeeded (\(event.required ?? 0) needed) after \(Self.seconds(event.duration ?? 0))"
        var details: [String] = []
        if event.timedOut == true, let missing = event.missing, !missing.isEmpty {
            details.append("    missing: \(missing.map(TerminalText.escaped).joined(separator: ", "))")
        }
        for (key, value) in event.report ?? [] {
            details.append("    \(TerminalText.escaped(key)) = \(shorten(value, to: valueWidth))")
        }
        return (head, details)
    }

    private func summary(_ event: RunEvent, stamp: String) -> [String] {
        let counts = FailedTask.counts(event.counts ?? [], allowed: failures.allowedCount, notNeeded: notNeeded.count)
            .map { "\($0.count) \($0.word)" }.joined(separator: ", ")
        var lines = ["\(stamp) run      finished in \(Self.seconds(event.duration ?? 0)): \(counts.isEmpty ? "nothing ran" : counts)\(reused.text) — exit \(event.runExitCode ?? 0)"]
        if !slowest.isEmpty { lines.append("    slowest: " + slowest.map { "\($0.name) \(Self.seconds($0.duration))" }.joined(separator: ", ")) }
        for failure in failures.listed {
            lines.append("    \(failure.allowed ? "failed (allowed)" : "failed"): \(failure.name)" + (failure.path.map { " — \($0)" } ?? ""))
            for line in failure.tail.suffix(FailedTask.summaryTailLines) { lines.append("      | " + line) }
        }
        if failures.unlisted > 0 { lines.append("    … and \(failures.unlisted) more failed (see the run record)") }
        if notNeeded.count > 0 {
            lines.append("    not needed: " + notNeeded.listed(5))
        }
        lines.append("    record: \(TerminalText.escaped(event.path ?? ""))")
        return lines
    }

    /// `value` on one line, control characters escaped (`\n` for a newline), cut to `valueWidth`.
    static func shorten(_ value: String, to valueWidth: Int) -> String {
        let oneLine = TerminalText.escaped(value)
        return oneLine.count > valueWidth ? String(oneLine.prefix(valueWidth)) + "… (\(value.utf8.count) bytes)" : oneLine
    }

    /// `14:03:07.250`, local time.
    static func clock(_ timestamp: Double) -> String {
        ClockText(timestamp, local: true).time
    }

    /// `0.25s`, `12.5s`, `2m5s`: hundredths below 10 s, tenths below 2 minutes.
    static func seconds(_ value: Double) -> String {
        guard value >= 0, value < 120 else {
            return value < 0 ? String((value * 100).rounded() / 100) + "s" : Duration.milliseconds(Int64(value * 1000)).text
        }
        // What String(Double) prints for a whole number of hundredths or
        // tenths, without its cost (a few of these per task).
        let hundredths = value < 10
        let scaled = Int((value * (hundredths ? 100 : 10)).rounded())
        let unit = hundredths ? 100 : 10
        let whole = scaled / unit
        var fraction = scaled % unit
        if hundredths, fraction % 10 == 0 { fraction /= 10 }
        let digits = hundredths && scaled % 10 != 0 && fraction < 10 ? "0\(fraction)" : "\(fraction)"
        return "\(whole).\(digits)s"
    }
}

/// `--output json`: every event as one JSON object per line (the same lines as `events.jsonl`).
package final class JSONLinesReporter: RunReporter, @unchecked Sendable {
    // @unchecked: called only on the engine's serial queue.
    private let output: LineWriter
    /// When the run started (epoch seconds), for `task_output`'s `elapsed`: it comes from the output thread.
    private let runStart = Mutex<Double?>(nil)

    package init(descriptor: Int32 = 1) {
        output = LineWriter(descriptor: descriptor) { $0.jsonLine + "\n" }
    }

    package func report(_ event: RunEvent) {
        if event.kind == .runStarted { runStart.withLock { $0 = event.timestamp - event.elapsed } }
        output.write(event: event)
    }

    /// With `--stream`: a `task_output` event per line (`stream`: stdout or stderr).
    package func output(task: String, line: String, isError: Bool) {
        var event = RunEvent(.taskOutput, elapsed: 0, subject: task)
        event.elapsed = max(0, event.timestamp - (runStart.withLock { $0 } ?? event.timestamp))
        event.stream = isError ? "stderr" : "stdout"
        event.line = line
        output.write(event.jsonLine + "\n")
    }

    package func finish() {
        output.finish()
    }
}
