import FlowrunValues
import FlowrunModel
import FlowrunEvents

/// What the live view knows about a run, built from its events alone: which
/// tasks run (since when, which attempt, how far along), which wait and on
/// what, how many finished how. Applying an event returns the lines it adds
/// above the live region (a finished task, a retry, a group, a join block,
/// the summary), each printed once.
///
/// A plain value, owned by `LiveTerminalReporter`'s drawing queue; `LiveFrame`
/// turns it into the live region. Costs stay flat at any size: waiting tasks
/// are kept per "what they wait on" in arrival order, so a frame looks at
/// the first few of each kind, never at all 20,000.
struct LiveState {
    struct Running {
        var name: String
        /// Run-elapsed seconds when this attempt started.
        var started: Double
        var attempt: Int
        var progress: Int?
        /// A task on Slurm: `queued (slurm job 12)`, `running on n1 (slurm job 12)`.
        var slurm: String?
        /// Arrival order, for a stable listing.
        var serial: Int
        /// A service: its probe (`tcp 127.0.0.1:8000`, `none`), and whether it has passed.
        var probe: String? = nil
        var ready = false
    }

    struct Waiting {
        var name: String
        /// `semaphore db 1/1 held by restore`: the entries of `waiting_on`.
        var waitingOn: [String]
        /// What the task waits on without the counts: tasks with the same key share a line.
        var key: String
        var serial: Int
    }

    struct Retrying {
        var name: String
        var attempt: Int
        /// Run-elapsed seconds when the next attempt is due.
        var due: Double
        var serial: Int
    }

    /// Tasks waiting on one kind of thing, in arrival order. Entries of tasks
    /// that have left stay in `queue` until they reach its head (or the
    /// queue is compacted), so leaving costs O(1).
    struct WaitingLine {
        var queue: [(name: String, serial: Int)] = []
        var head = 0
        var count = 0
    }

    /// Values longer than this are shortened in join blocks (whole in the run record).
    static let valueWidth = 200
    /// At most this many failed tasks are named in the summary.
    static let summaryFailureLimit = 10

    private(set) var workflow = ""
    private(set) var started = false
    private(set) var finished = false
    /// Tasks the run knew of when it started (fan-outs may add more).
    private(set) var knownTasks = 0
    private(set) var finishedTasks = 0
    private(set) var failedTasks = 0
    private(set) var running: [String: Running] = [:]
    private(set) var waiting: [String: Waiting] = [:]
    private(set) var waitingLines: [String: WaitingLine] = [:]
    private(set) var retrying: [String: Retrying] = [:]
    private var nextSerial = 0
    /// The terminal's width, set by the view before each batch of events:
    /// join blocks and failure reasons are fitted (or wrapped) to it.
    var columns = 80
    private var failures = FailedTasks(limit: LiveState.summaryFailureLimit)
    /// Members joins cancelled once they had what they needed.
    /// The first few of them and how many (a quorum over 100,000 members keeps five names, not all).
    private var notNeeded = NameSample()
    /// Members a join did not need that never started, since the last
    /// `collapsedLines()`, and the join that said so.
    private var notNeededUnstarted = NameSample()
    private var notNeededJoin: String?
    /// How each join that completed ended, for its cancelled members' lines.
    private var joinEnds: [String: ReasonText.JoinEnd] = [:]
    /// Each running task's latest line of output (`--stream` / the row's dimmed tail).
    private(set) var latestOutput: [String: String] = [:]
    /// Tasks cancelled before they started, since the last `collapsedLines()`.
    private var cancelledUnstarted = NameSample()
    /// The three slowest finished tasks, slowest first.
    private var slowest: [(name: String, duration: Double)] = []
    /// Tasks that succeeded without running: restored, up to date.
    private var reused = ReusedTally()

    /// Every task the view has seen so far or was told of at the start.
    var totalTasks: Int { max(knownTasks, finishedTasks + running.count + waiting.count + retrying.count) }
    /// Groups whose fan-out is sized only as it runs (a stdout read line by
    /// line), until they finish: while any is left the total is not known.
    private(set) var groupsSizedAtRunTime: Set<String> = []
    /// Whether `totalTasks` is the whole run's count: no fan-out sized at run time is still going.
    var totalIsKnown: Bool { groupsSizedAtRunTime.isEmpty }

    /// A running task printed `line`: its row shows it (blank lines keep the last one).
    mutating func noteOutput(task: String, line: String) {
        guard running[task] != nil else { return }
        let text = TerminalText.sanitized(line)
        if !text.allSatisfy({ $0 == " " }) { latestOutput[task] = text }
    }

    /// Updates the state; returns the lines to print above the live region.
    mutating func apply(_ event: RunEvent) -> [StyledLine] {
        let name = TerminalText.escapedName(event.subject ?? "")
        switch event.payload {
        case .runStarted(let run):
            started = true
            workflow = TerminalText.escaped(run.workflow)
            knownTasks = run.members
            groupsSizedAtRunTime = Set(run.sizedAtRunTime ?? [])
            // `flowrun watch`: which file this run is for.
            return run.trigger.map { [StyledLine("↺ after a change to \(TerminalText.escaped($0))", .accent)] } ?? []
        case .taskWaiting(let waitingEvent):
            leaveWaiting(name)
            running[name] = nil  // a service waiting out its port's closed connections was running
            let entries = waitingEvent.waitingOn
            let key = entries.map(Self.resourceName).joined(separator: ", ")
            waiting[name] = Waiting(name: name, waitingOn: entries, key: key, serial: takeSerial())
            waitingLines[key, default: WaitingLine()].queue.append((name, nextSerial - 1))
            waitingLines[key]!.count += 1
            return []
        case .taskStarted(let startedEvent):
            leaveWaiting(name)
            retrying[name] = nil
            running[name] = Running(name: name, started: event.elapsed, attempt: startedEvent.attempt, progress: nil, serial: takeSerial(), probe: startedEvent.probe)
            return []
        case .taskReady(let ready):
            running[name]?.ready = true
            var line = StyledLine("● ", .success)
            line.append(name, .bold)
            line.append(" ready (\(PlainReporter.seconds(ready.after))\(ready.probe.map { ", " + TerminalText.sanitized($0) } ?? ""))", .dim)
            return [line]
        case .taskProgress(let progress):
            running[name]?.progress = progress.percent
            return []
        case .taskSlurm(let slurm):
            running[name]?.slurm = TerminalText.sanitized(slurm.text)
            return []
        case .taskOutput:
            return []
        case .taskRetrying(let retryingEvent):
            running[name] = nil
            let attempt = retryingEvent.attempt
            retrying[name] = Retrying(name: name, attempt: attempt, due: event.elapsed + retryingEvent.delay, serial: takeSerial())
            let why = retryingEvent.reason.map { " (\(TerminalText.escaped($0)))" } ?? ""
            var line = StyledLine("↻ ", .warning)
            line.append(name, .bold)
            line.append(" \(retryingEvent.status.rawValue)\(why), attempt \(attempt)\(retryingEvent.memoryBytes.map { " with \(ByteSize.text($0)) memory" } ?? "") in \(PlainReporter.seconds(retryingEvent.delay))", .dim)
            return [line]
        case .taskFinished(let finished):
            running[name] = nil
            latestOutput[name] = nil
            retrying[name] = nil
            leaveWaiting(name)
            return taskFinished(finished)
        case .groupFinished(let group):
            // Its members are all seen now: counted among the finished.
            groupsSizedAtRunTime.remove(group.group)
            var line = StyledLine("▣ ", Self.role(of: group.status))
            line.append("group ", .dim)
            line.append(name, .bold)
            line.append(" \(group.status.rawValue) (\(group.succeeded)/\(group.members) succeeded, \(PlainReporter.seconds(group.duration ?? 0)))")
            // A foreach that could not be read or named fails the group before any member: say why.
            if let reason = group.reason, reason.hasPrefix("foreach: ") { line.append(": " + TerminalText.sanitized(reason)) }
            return [line]
        case .joinCompleted(let event):
            joinEnds[name] = ReasonText.JoinEnd(event)
            if let report = event.joinReport {
                let block = JoinBlock.lines(report, columns: columns)
                var head = StyledLine("◆ ", report.timedOut ? .warning : Self.role(of: report.status))
                head.append("join ", .dim)
                head.append(TerminalText.sanitized(block.head))
                return JoinBlock.wrapped(head, width: max(20, columns - 1), indent: "    ") + block.details
            }
            let block = PlainReporter.joinBlock(event, valueWidth: Self.valueWidth)
            var head = StyledLine("◆ ", event.timedOut ? .warning : Self.role(of: event.status))
            head.append("join ", .dim)
            head.append(block.head)
            return [head] + block.details.map { StyledLine(TerminalText.sanitized($0)) }
        case .runFinished(let finishedEvent):
            let collapsed = collapsedLines()
            finished = true
            running.removeAll()
            waiting.removeAll()
            waitingLines.removeAll()
            retrying.removeAll()
            return collapsed + summary(finishedEvent)
        }
    }

    /// One line for the tasks cancelled before they started since the last
    /// call (the view asks once per frame): `⊘ 3 cancelled before they started (signal): a, b, c`.
    mutating func collapsedLines() -> [StyledLine] {
        var lines: [StyledLine] = []
        if notNeededUnstarted.count > 0 {
            let why = ReasonText.describe(CancelReason.joinSettled.rawValue, cancelledBy: notNeededJoin).dropFirst("not needed: ".count)
            let line: StyledLine
            if notNeededUnstarted.count == 1 {
                line = taskLine(symbol: "⊘", role: .dim, name: notNeededUnstarted.first[0], details: "not needed (\(why))")
            } else {
                var many = StyledLine("⊘ ", .dim)
                many.append("\(notNeededUnstarted.count) tasks", .bold)
                many.append(" not needed (\(why)): \(notNeededUnstarted.listed(3))", .dim)
                line = many
            }
            lines += JoinBlock.wrapped(line, width: max(20, columns - 1), indent: "    ")
            notNeededUnstarted = NameSample()
        }
        return lines + collapsedCancelledLines()
    }

    private mutating func collapsedCancelledLines() -> [StyledLine] {
        guard cancelledUnstarted.count > 0 else { return [] }
        defer { cancelledUnstarted = NameSample() }
        if cancelledUnstarted.count == 1 {
            return [taskLine(symbol: "⊘", role: .dim, name: cancelledUnstarted.first[0], details: "cancelled before it started")]
        }
        let names = cancelledUnstarted.first.prefix(3).joined(separator: ", ") + (cancelledUnstarted.count > 3 ? ", …" : "")
        var line = StyledLine("⊘ ", .dim)
        line.append("\(cancelledUnstarted.count) tasks", .bold)
        line.append(" cancelled before they started: \(names)", .dim)
        return [line]
    }

    private func taskLine(symbol: String, role: TextRole, name: String, details: String) -> StyledLine {
        var line = StyledLine(symbol + " ", role)
        line.append(name, role == .success ? .plain : .bold)
        if !details.isEmpty { line.append("  " + details, role == .success ? .dim : role) }
        return line
    }

    private mutating func taskFinished(_ event: RunEvent.TaskFinished) -> [StyledLine] {
        let name = TerminalText.escapedName(event.task)
        let status = event.status
        finishedTasks += 1
        let ran = event.attempt > 0
        if !ran, ReasonText.isNotNeeded(event, joinEnd: event.cancelledBy.flatMap { joinEnds[$0] }) {
            // A quorum over 1,000 members is one line for those that never started.
            notNeeded.add(name)
            notNeededUnstarted.add(name)
            notNeededJoin = event.cancelledBy
            return []
        }
        if status == .cancelled && !ran {
            // Ctrl-C on 20,000 pending tasks is one line, not 20,000.
            cancelledUnstarted.add(name)
            return []
        }
        var details: [String] = []
        // A cancelled task's exit code and signal are what stopping it did: the reason says it.
        if status == .failed || status == .timedOut {
            if let code = event.exitCode { details.append("exit \(code)") }
            if let signal = event.signal { details.append("signal \(signal)") }
        }
        let allowed = event.allowed
        let joinEnd = event.cancelledBy.flatMap { joinEnds[$0] }
        let notNeeded = ReasonText.isNotNeeded(event, joinEnd: joinEnd)
        if status != .succeeded {
            if let reason = event.reason, !details.contains(reason) {
                details.append(TerminalText.escaped(ReasonText.describe(reason, cancelledBy: event.cancelledBy, joinEnd: joinEnd)))
            }
        }
        if let duration = event.duration, ran {
            details.append(PlainReporter.seconds(duration))
            noteDuration(name, duration)
        }
        if event.attempt > 1 { details.append("\(event.attempt) attempts") }
        reused.note(event)
        if let kind = event.reused { details.append(kind == .upToDate ? "up to date" : kind.rawValue) }
        var text = details.joined(separator: ", ")
        if status != .succeeded {
            if allowed { details.insert("allowed", at: 0) }
            var word = notNeeded ? "not needed" : status.rawValue.replacingAll("_", with: " ")
            if notNeeded, let index = details.firstIndex(where: { $0.hasPrefix("not needed: ") }) {
                details[index] = String(details[index].dropFirst("not needed: ".count))
            }
            if let reason = event.reason, reason.hasPrefix(word), let index = details.firstIndex(of: reason) {
                word = reason
                details.remove(at: index)
            }
            text = word + (details.isEmpty ? "" : " (" + details.joined(separator: ", ") + ")")
        }
        let role = allowed ? TextRole.warning : Self.role(of: status)
        // A failure's line wraps: its reason is never cut, however narrow the terminal.
        let line = taskLine(symbol: Self.symbol(of: status), role: role, name: name, details: text)
        var lines = status != .succeeded ? JoinBlock.wrapped(line, width: max(20, columns - 1), indent: "    ") : [line]
        if notNeeded { self.notNeeded.add(name) }
        if status == .failed || status == .timedOut {
            if !allowed { failedTasks += 1 }
            failures.append(FailedTask(name: name, path: event.log?.path, tail: event.logTail ?? [], allowed: allowed))
            for tail in event.logTail ?? [] {
                var line = StyledLine("    │ ", .dim)
                line.append(TerminalText.sanitized(tail))
                lines += JoinBlock.wrapped(line, width: max(20, columns - 1), indent: "    │ ")
            }
            if let path = event.log?.path { lines.append(StyledLine("    log: \(PathText.shortened(TerminalText.escaped(path), to: columns - 10))", .dim)) }
        }
        return lines
    }

    private mutating func noteDuration(_ name: String, _ duration: Double) {
        guard slowest.count < 3 || duration > slowest[slowest.count - 1].duration else { return }
        let position = slowest.firstIndex { $0.duration < duration } ?? slowest.count
        slowest.insert((name, duration), at: position)
        if slowest.count > 3 { slowest.removeLast() }
    }

    /// The final summary: outcome and wall time, counts per status, the
    /// slowest tasks, the failed ones with their logs, the run record.
    private func summary(_ event: RunEvent.RunFinished) -> [StyledLine] {
        let exitCode = event.exitCode
        let succeeded = exitCode == 0
        var head = StyledLine(succeeded ? "✓ " : "✗ ", succeeded ? .success : .failure)
        head.append(workflow.isEmpty ? "run" : workflow, .bold)
        head.append(" \(succeeded ? "succeeded" : "failed") in \(PlainReporter.seconds(event.duration)) (exit \(exitCode))")
        var lines = [StyledLine(), head]
        var counts = StyledLine("  ")
        let words = FailedTask.counts(event.counts, allowed: failures.allowedCount, notNeeded: notNeeded.count)
        for (offset, entry) in words.enumerated() {
            if offset > 0 { counts.append(" · ", .dim) }
            counts.append("\(entry.count) \(entry.word)", entry.word == "failed (allowed)" ? .warning : Self.role(of: entry.status))
        }
        if counts.spans.count == 1 { counts.append("nothing ran", .dim) }
        if !reused.text.isEmpty { counts.append(reused.text, .dim) }
        lines += JoinBlock.wrapped(counts, width: max(20, columns - 1), indent: "  ")
        if !slowest.isEmpty {
            var line = StyledLine("  slowest: ", .dim)
            line.append(slowest.map { "\($0.name) \(PlainReporter.seconds($0.duration))" }.joined(separator: ", "))
            lines.append(line)
        }
        for failure in failures.listed {
            var line = StyledLine(failure.allowed ? "  failed (allowed): " : "  failed: ", failure.allowed ? .warning : .failure)
            line.append(failure.name, .bold)
            if let path = failure.path {
                line.append(" — \(PathText.shortened(TerminalText.escaped(path), to: max(12, columns - 1 - line.width - 3)))", .dim)
            }
            lines.append(line)
            for tail in failure.tail.suffix(FailedTask.summaryTailLines) {
                var line = StyledLine("    │ ", .dim)
                line.append(TerminalText.sanitized(tail))
                lines.append(line)
            }
        }
        if failures.unlisted > 0 {
            lines.append(StyledLine("  … and \(failures.unlisted) more failed (see the run record)", .failure))
        }
        if notNeeded.count > 0 {
            var line = StyledLine("  not needed: ", .dim)
            line.append(notNeeded.listed(5))
            lines.append(line)
        }
        lines.append(StyledLine("  record: \(PathText.shortened(TerminalText.escaped(event.path), to: columns - 11))", .dim))
        return lines
    }

    private mutating func takeSerial() -> Int {
        nextSerial += 1
        return nextSerial - 1
    }

    private mutating func leaveWaiting(_ name: String) {
        guard let entry = waiting.removeValue(forKey: name) else { return }
        waitingLines[entry.key]!.count -= 1
        if waitingLines[entry.key]!.count == 0 {
            waitingLines[entry.key] = nil
        } else {
            trimWaitingLine(entry.key)
        }
    }

    /// Drops entries of tasks that left from the head; compacts a queue that
    /// is mostly such entries.
    private mutating func trimWaitingLine(_ key: String) {
        guard var line = waitingLines[key] else { return }
        waitingLines[key] = nil  // keep the array uniquely referenced while editing
        while line.head < line.queue.count, !isWaiting(line.queue[line.head], key: key) { line.head += 1 }
        if line.head > 64 && line.head * 2 > line.queue.count {
            line.queue.removeFirst(line.head)
            line.head = 0
        }
        if line.queue.count - line.head > 2 * line.count + 64 {
            line.queue = line.queue[line.head...].filter { isWaiting($0, key: key) }
            line.head = 0
        }
        waitingLines[key] = line
    }

    private func isWaiting(_ entry: (name: String, serial: Int), key: String) -> Bool {
        guard let waiter = waiting[entry.name] else { return false }
        return waiter.serial == entry.serial && waiter.key == key
    }

    /// The first `limit` tasks still waiting on `key`, in arrival order.
    func firstWaiting(on key: String, limit: Int) -> [Waiting] {
        guard let line = waitingLines[key] else { return [] }
        var result: [Waiting] = []
        var index = line.head
        while index < line.queue.count && result.count < limit {
            let entry = line.queue[index]
            if isWaiting(entry, key: key) { result.append(waiting[entry.name]!) }
            index += 1
        }
        return result
    }

    /// `group downloads 10/10 held by a, b` → `group downloads`.
    static func resourceName(_ entry: String) -> String {
        let words = entry.split(separator: " ", omittingEmptySubsequences: false)
        guard let counts = words.firstIndex(where: { word in word.contains("/") && word.split(separator: "/").allSatisfy { $0.allSatisfy(\.isNumber) } })
        else { return entry }
        return words[..<counts].joined(separator: " ")
    }

    static func symbol(of status: TaskStatus) -> String {
        switch status {
        case .succeeded: return "✓"
        case .failed, .timedOut: return "✗"
        case .cancelled: return "⊘"
        case .skipped: return "-"
        case .pending, .waiting, .running: return "·"
        }
    }

    static func role(of status: TaskStatus?) -> TextRole {
        switch status {
        case .succeeded?: return .success
        case .failed?, .timedOut?: return .failure
        case .cancelled?, .skipped?: return .dim
        default: return .plain
        }
    }
}
