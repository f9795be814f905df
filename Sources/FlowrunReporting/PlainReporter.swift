import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues
import FlowrunModel
package import FlowrunEvents

/// `--output plain`: one line per event with a timestamp, stable and easy to
/// grep; a join's block when it completes; the summary at the end.
package final class PlainReporter: RunReporter, @unchecked Sendable {
    // @unchecked: `report` and `finish` come on the engine's serial queue,
    // one at a time, and only they touch the tallies below. `output` comes
    // on the output thread (with `--stream`; a Slurm job's lines on the
    // engine's queue) and touches nothing but `output`, a `LineWriter`,
    // whose state is behind its own mutex.
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

    /// `handsOverAtEnd`: the run starts no task (see `LineWriter`).
    package init(descriptor: Int32 = 1, handsOverAtEnd: Bool = false) {
        output = LineWriter(descriptor: descriptor, handsOverAtEnd: handsOverAtEnd) { Self.commonLine($0) ?? "" }
        columns = isatty(descriptor) == 1 ? TerminalSize.of(descriptor).columns : 80
    }

    package func report(_ event: RunEvent) {
        if Self.commonWord(event) != nil {
            if case .taskFinished(let finished) = event.payload, let duration = finished.duration { noteDuration(finished.task, duration) }
            output.write(event: event)
            return
        }
        var lines: [String] = []
        let stamp = Self.clock(event.timestamp)
        let name = TerminalText.escapedName(event.subject ?? "")
        switch event.payload {
        case .runStarted(let started):
            let tasks = started.members
            let unsized = started.sizedAtRunTime?.count ?? 0
            // The words `validate` and `--dry-run` use for a fan-out whose items only a run has.
            let more = unsized > 0 ? " + \(unsized) fan-out\(unsized == 1 ? "" : "s") sized at run time" : ""
            lines.append("\(stamp) run      \(TerminalText.escaped(started.workflow)) started (\(tasks) task\(tasks == 1 ? "" : "s")\(more), record \(TerminalText.escaped(started.path)))"
                + (started.trigger.map { " after a change to \(TerminalText.escaped($0))" } ?? ""))
        case .taskWaiting, .taskStarted, .taskOutput:
            break  // always `commonLine`'s
        case .taskProgress(let progress):
            lines.append("\(stamp) progress \(name) \(progress.percent)%")
        case .taskReady(let ready):
            lines.append("\(stamp) ready    \(name) (\(Self.seconds(ready.after))\(ready.probe.map { ", " + TerminalText.escaped($0) } ?? ""))")
        case .taskSlurm(let slurm):
            lines.append("\(stamp) slurm    \(name) \(TerminalText.escaped(slurm.text))")
        case .taskRetrying(let retrying):
            let why = retrying.reason.map { " (\(TerminalText.escaped($0)))" } ?? ""
            lines.append("\(stamp) retry    \(name): \(retrying.status.rawValue)\(why), attempt \(retrying.attempt)\(retrying.memoryBytes.map { " with \(ByteSize.text($0)) memory" } ?? "") in \(Self.seconds(retrying.delay))")
        case .taskFinished(let finished):
            lines += taskFinished(finished, stamp: stamp)
        case .groupFinished(let group):
            // A foreach that could not be read or named fails the group before any member: say why.
            let why = group.reason.flatMap { $0.hasPrefix("foreach: ") ? ": " + TerminalText.escaped($0) : nil } ?? ""
            lines.append("\(stamp) group    \(name) \(group.status.rawValue) (\(group.succeeded)/\(group.members) succeeded, \(Self.seconds(group.duration ?? 0)))\(why)")
        case .joinCompleted(let event):
            joinEnds[name] = ReasonText.JoinEnd(event)
            if let report = event.joinReport {
                let block = JoinBlock.lines(report, columns: columns)
                lines += ["\(stamp) join     \(block.head)"] + block.details.map(\.description)
            } else {
                let block = Self.joinBlock(event, valueWidth: valueWidth)
                lines += ["\(stamp) join     \(block.head)"] + block.details
            }
        case .runFinished(let finished):
            lines += summary(finished, stamp: stamp)
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
        switch event.payload {
        case .taskStarted: " start    "
        case .taskWaiting: " waiting  "
        case .taskFinished(let finished) where finished.status == .succeeded && finished.attempt == 1: " ok       "
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
        switch event.payload {
        case .taskWaiting(let waiting):
            line += ": "
            for (position, what) in waiting.waitingOn.enumerated() {
                if position > 0 { line += ", " }
                line += TerminalText.escaped(what)
            }
        case .taskFinished(let finished):
            if let duration = finished.duration {
                line += " ("
                line += seconds(duration)
                line += ")"
            }
        case .taskStarted(let started):
            if started.attempt > 1 {
                line += " (attempt "
                line += String(started.attempt)
                line += ")"
            }
            if let probe = started.probe {
                line += " starting (probe "
                line += TerminalText.escaped(probe)
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

    private func taskFinished(_ event: RunEvent.TaskFinished, stamp: String) -> [String] {
        let name = TerminalText.escapedName(event.task)
        let status = event.status
        var details: [String] = []
        // A cancelled task's exit code and signal are what stopping it did: the reason says it.
        if status != .cancelled {
            if let code = event.exitCode, status != .succeeded { details.append("exit \(code)") }
            if let signal = event.signal { details.append("signal \(signal)") }
        }
        if let reason = event.reason, status != .succeeded, !details.contains(reason) {
            details.append(TerminalText.escaped(ReasonText.describe(reason, cancelledBy: event.cancelledBy, joinEnd: event.cancelledBy.flatMap { joinEnds[$0] })))
        }
        if let duration = event.duration, event.attempt > 0 { details.append(Self.seconds(duration)) }
        if event.attempt > 1 { details.append("\(event.attempt) attempts") }
        let allowed = event.allowed
        if allowed { details.insert("allowed", at: 0) }
        // Every word 8 columns wide, so names line up whatever the status.
        let word: String
        switch status {
        case .succeeded: word = event.reused == .upToDate ? "uptodate" : event.reused == .restored ? "restored" : "ok      "
        case .failed: word = allowed ? "failed  " : "FAILED  "
        case .timedOut: word = "TIMEOUT "
        case .cancelled: word = "cancel  "
        default: word = status.rawValue.padding(to: 8)
        }
        var lines = ["\(stamp) \(word) \(name)" + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")]
        reused.note(event)
        if let duration = event.duration, event.attempt > 0 { noteDuration(event.task, duration) }
        if ReasonText.isNotNeeded(event, joinEnd: event.cancelledBy.flatMap { joinEnds[$0] }) {
            notNeeded.add(name)
        }
        if status == .failed || status == .timedOut {
            let tail = (event.logTail ?? []).map(TerminalText.escaped)
            failures.append(FailedTask(name: name, path: event.log.map { TerminalText.escaped($0.path) }, tail: tail, allowed: allowed))
            for line in tail { lines.append("    | " + line) }
            if let path = event.log?.path { lines.append("    log: \(TerminalText.escaped(path))") }
        }
        return lines
    }

    /// A join's block (SPEC §5), shared with the live view: the head line
    /// (`page-ready timed out: 2/3 succeeded (3 needed) after 2.0s`), then
    /// indented lines for the missing members and each reported value,
    /// values longer than `valueWidth` shortened (whole in the run record).
    static func joinBlock(_ event: RunEvent.JoinCompleted, valueWidth: Int) -> (head: String, details: [String]) {
        let name = TerminalText.escapedName(event.join)
        let outcome = event.timedOut ? "timed out" : event.status.rawValue
        let head = "\(name) \(outcome): \(event.succeeded)/\(event.members) succeeded (\(event.required) needed) after \(Self.seconds(event.duration))"
        var details: [String] = []
        if event.timedOut, !event.missing.isEmpty {
            details.append("    missing: \(event.missing.map(TerminalText.escaped).joined(separator: ", "))")
        }
        for (key, value) in event.report {
            details.append("    \(TerminalText.escaped(key)) = \(shorten(value, to: valueWidth))")
        }
        return (head, details)
    }

    private func summary(_ event: RunEvent.RunFinished, stamp: String) -> [String] {
        let counts = FailedTask.counts(event.counts, allowed: failures.allowedCount, notNeeded: notNeeded.count)
            .map { "\($0.count) \($0.word)" }.joined(separator: ", ")
        var lines = ["\(stamp) run      finished in \(Self.seconds(event.duration)): \(counts.isEmpty ? "nothing ran" : counts)\(reused.text) — exit \(event.exitCode)"]
        if !slowest.isEmpty { lines.append("    slowest: " + slowest.map { "\($0.name) \(Self.seconds($0.duration))" }.joined(separator: ", ")) }
        for failure in failures.listed {
            lines.append("    \(failure.allowed ? "failed (allowed)" : "failed"): \(failure.name)" + (failure.path.map { " — \($0)" } ?? ""))
            for line in failure.tail.suffix(FailedTask.summaryTailLines) { lines.append("      | " + line) }
        }
        if failures.unlisted > 0 { lines.append("    … and \(failures.unlisted) more failed (see the run record)") }
        if notNeeded.count > 0 {
            lines.append("    not needed: " + notNeeded.listed(5))
        }
        lines.append("    record: \(TerminalText.escaped(event.path))")
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
package final class JSONLinesReporter: RunReporter, Sendable {
    private let output: LineWriter
    /// When the run started (epoch seconds), for `task_output`'s `elapsed`: it comes from the output thread.
    private let runStart = Mutex<Double?>(nil)

    /// `handsOverAtEnd`: the run starts no task (see `LineWriter`).
    package init(descriptor: Int32 = 1, handsOverAtEnd: Bool = false) {
        output = LineWriter(descriptor: descriptor, handsOverAtEnd: handsOverAtEnd) { $0.jsonLine + "\n" }
    }

    package func report(_ event: RunEvent) {
        if event.kind == .runStarted { runStart.withLock { $0 = event.timestamp - event.elapsed } }
        output.write(event: event)
    }

    /// With `--stream`: a `task_output` event per line (`stream`: stdout or stderr).
    package func output(task: String, line: String, isError: Bool) {
        var event = RunEvent(elapsed: 0, .taskOutput(.init(task: task, stream: isError ? .stderr : .stdout, line: line)))
        event.elapsed = max(0, event.timestamp - (runStart.withLock { $0 } ?? event.timestamp))
        output.write(event.jsonLine + "\n")
    }

    package func finish() {
        output.finish()
    }
}
