#if canImport(Glibc)
import Glibc
#endif
package import FlowrunRecord
import FlowrunEvents
import FlowrunModel
import FlowrunValues

/// `flowrun show`: a recorded run as text for people or JSON for programs.
/// Every name and every line a task printed is escaped (TerminalText): a
/// record holds what tasks printed, and that must not steer the terminal.
///
///     run       20261125-153252.204816-4f1c09a2b7d3
///     workflow  ci (ci.yaml)
///     started   2026-11-25 15:32:52, ran 3.21s
///     outcome   failed, exit 1: 3 succeeded, 1 failed
///     record    .flowrun/runs/20261125-153252.204816-4f1c09a2b7d3
///
///       ✓ build   succeeded  1.20s
///       ✗ test    failed     0.50s  exit 3
///
///     failed: test — .flowrun/runs/…/logs/000001-test.log
///       | the last lines it printed
package struct RecordedRunView {
    package var run: RecordedRun
    /// The history holding it: log tails and join reports are read from there.
    package var history: RunHistory
    /// Join blocks fit this width.
    package var columns: Int

    /// A group with at most this many members lists them all; a bigger one
    /// lists those that did not succeed (`--output json` lists everyone).
    static let groupMembersListed = 10
    /// Failures shown with their log's last lines.
    static let failuresWithTails = 20

    /// `columns` nil: the width of the terminal on stdout, else 80.
    package init(run: RecordedRun, history: RunHistory, columns: Int? = nil) {
        self.run = run
        self.history = history
        self.columns = columns ?? (isatty(1) == 1 ? TerminalSize.of(1).columns : 80)
    }

    // MARK: Text

    package var text: String {
        var out = ""
        out.reserveCapacity(64 * (run.tasks.count + 16))
        appendHead(to: &out)
        out += "\n"
        appendTasks(to: &out)
        appendJoins(to: &out)
        appendFailures(to: &out)
        return out
    }

    private func appendHead(to out: inout String) {
        out += "run       " + run.id + "\n"
        if let workflow = run.workflow {
            out += "workflow  " + TerminalText.escaped(workflow) + (run.file.map { " (" + TerminalText.escaped($0) + ")" } ?? "") + "\n"
        }
        var started = "started   " + (run.startTime.map(Self.localTime) ?? "unknown")
        if let duration = run.duration { started += (run.state == .running ? ", running for " : ", ran ") + PlainReporter.seconds(duration) }
        out += started + "\n"
        var outcome = "outcome   " + run.outcome
        if run.state == .finished || run.stoppedBy == "killed", let code = run.exitCode { outcome += ", exit \(code)" }
        let counts = Self.countsText(run)
        if !counts.isEmpty { outcome += ": " + counts }
        out += outcome + "\n"
        if run.state == .interrupted {
            out += run.stoppedBy == "killed"
                ? "          (the engine was killed before it could write summary.json; what follows is from events.jsonl)\n"
                : "          (no summary.json and no flowrun holds the run: it was killed before it could finish; what follows is from events.jsonl)\n"
        }
        out += "record    " + TerminalText.escaped(run.folder) + "\n"
    }

    /// `3 succeeded, 1 failed, 2 running, 5 not started yet`.
    static func countsText(_ run: RecordedRun) -> String {
        var parts = run.counts.map { "\($0.count) \($0.status.rawValue.replacingAll("_", with: " "))" }
        if run.state == .running, let planned = run.plannedTasks, planned > run.tasks.count {
            parts.append("\(planned - run.tasks.count) not started yet")
        }
        return parts.joined(separator: ", ")
    }

    private func appendTasks(to out: inout String) {
        var membersOf: [String: [Int]] = [:]
        for (index, task) in run.tasks.enumerated() {
            if let group = task.group { membersOf[group, default: []].append(index) }
        }
        let groups = Dictionary(run.groups.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        let nameWidth = min(40, run.tasks.reduce(0) { max($0, TerminalText.width(TerminalText.escapedName($1.name)) + ($1.group == nil ? 0 : 2)) })
        let now = Self.now()
        var shownGroups = Set<String>()
        for task in run.tasks {
            guard let groupName = task.group else {
                appendTask(task, indent: "  ", nameWidth: nameWidth, now: now, to: &out)
                continue
            }
            guard shownGroups.insert(groupName).inserted else { continue }
            let members = membersOf[groupName] ?? []
            let succeeded = members.count { run.tasks[$0].status == .succeeded }
            let group = groups[groupName]
            var line = "  " + TerminalText.escapedName(groupName) + "  group " + (group?.status.rawValue.replacingAll("_", with: " ") ?? "running")
            line += ": \(succeeded)/\(members.count) members succeeded"
            if let reason = group?.reason, group?.status != .succeeded { line += " (" + TerminalText.escaped(reason) + ")" }
            out += line + "\n"
            let listed = members.count <= Self.groupMembersListed ? members : members.filter { run.tasks[$0].status != .succeeded }
            for member in listed { appendTask(run.tasks[member], indent: "    ", nameWidth: nameWidth - 2, now: now, to: &out) }
            if listed.count < members.count {
                out += "    … and \(members.count - listed.count) succeeded members not listed (--output json lists them)\n"
            }
        }
        if run.tasks.isEmpty { out += "  no task has started yet\n" }
    }

    /// `  ✓ build   succeeded  1.20s  exit 3, 2 attempts`.
    private func appendTask(_ task: RecordedRun.Task, indent: String, nameWidth: Int, now: Double, to out: inout String) {
        out += indent
        out += Self.symbol(task.status)
        out += " "
        out += TerminalText.fitted(TerminalText.escapedName(task.name), to: max(nameWidth, 1))
        out += "  "
        let word = task.status.rawValue.replacingAll("_", with: " ")
        out += word
        out += String(repeating: " ", count: max(1, 11 - word.utf8.count))
        var facts: [String] = []
        if task.status == .running, run.state == .running, let started = task.started, let start = run.startTime {
            facts.append("for " + PlainReporter.seconds(max(0, now - start - started)))
        } else if task.status == .running {
            facts.append("when flowrun was killed")
        } else if let duration = task.duration, task.attempts > 0 {
            facts.append(PlainReporter.seconds(duration))
        }
        // What it used (SPEC §13): `cpu 0.31s  peak mem 308.6 MiB`.
        if let cpu = task.cpuSeconds { facts.append("cpu " + PlainReporter.seconds(cpu)) }
        if let peak = task.peakMemoryBytes { facts.append("peak mem " + ByteSize.text(peak)) }
        if let why = Self.why(task) { facts.append(why) }
        if task.allowed { facts.append("allowed") }
        if task.attempts > 1 { facts.append("\(task.attempts) attempts") }
        out += facts.joined(separator: "  ")
        while out.hasSuffix(" ") { out.removeLast() }
        out += "\n"
    }

    /// `exit 3`, `timed out after 5s`, `a need did not succeed`: why a task did not succeed (nil if it did).
    static func why(_ task: RecordedRun.Task) -> String? {
        guard task.status != .succeeded else { return nil }
        var parts: [String] = []
        if task.status.isFailure, let code = task.exitCode, code != 0 { parts.append("exit \(code)") }
        if let reason = task.reason, !parts.contains(reason) { parts.append(TerminalText.escaped(reason)) }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    static func symbol(_ status: TaskStatus) -> String {
        switch status {
        case .succeeded: return "✓"
        case .failed, .timedOut: return "✗"
        case .cancelled: return "⊘"
        case .skipped: return "-"
        case .running: return "▶"
        case .pending, .waiting: return "…"
        }
    }

    private func appendJoins(to out: inout String) {
        guard !run.joins.isEmpty else { return }
        out += "\n"
        for join in run.joins {
            if join.reportFile != nil, let report = history.joinReport(run.id, join: join.name) {
                let block = JoinBlock.lines(report, columns: columns)
                out += "join " + block.head + "\n"
                for line in block.details { out += line.description + "\n" }
            } else {
                var line = "join " + TerminalText.escapedName(join.name) + " " + join.status.rawValue.replacingAll("_", with: " ")
                if let succeeded = join.succeeded, let required = join.required { line += ": \(succeeded) succeeded (\(required) needed)" }
                if let reason = join.reason, join.status != .succeeded { line += " (" + TerminalText.escaped(reason) + ")" }
                out += line + "\n"
            }
        }
    }

    /// Failed and timed-out tasks (not those `continue_on_error` allowed), with their last lines.
    private var failures: [RecordedRun.Task] {
        run.tasks.filter { $0.status.isFailure && !$0.allowed }
    }

    private func appendFailures(to out: inout String) {
        let failures = self.failures
        guard !failures.isEmpty else { return }
        out += "\n"
        for task in failures.prefix(Self.failuresWithTails) {
            var head = task.status == .timedOut ? "timed out: " : "failed: "
            head += TerminalText.escapedName(task.name)
            if let why = Self.why(task) { head += " (" + why + ")" }
            if let log = task.logPath { head += " — " + TerminalText.escaped(log) }
            out += head + "\n"
            if let file = task.logFile {
                for line in history.logTail(run.id, file: file, lines: FailedTask.summaryTailLines) {
                    out += "  | " + TerminalText.escaped(line) + "\n"
                }
            }
        }
        if failures.count > Self.failuresWithTails {
            out += "… and \(failures.count - Self.failuresWithTails) more failed tasks (flowrun show --output json lists them)\n"
        }
    }

    // MARK: JSON

    /// One JSON object (docs/RUNNING.md, "Day two").
    package var json: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(200 * (run.tasks.count + 16))
        var head = Self.headJSON(run)
        head.add("planned_tasks", run.plannedTasks)
        bytes += head.finish()
        bytes.removeLast()
        bytes += ",\"tasks\":[".utf8
        for (position, task) in run.tasks.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            var object = JSONObjectWriter()
            object.add("name", task.name)
            object.add("status", task.status.rawValue)
            object.add("reason", task.reason)
            object.add("group", task.group)
            object.add("item", task.item)
            if task.isFinally { object.add("phase", "finally") }
            object.add("attempts", task.attempts)
            object.add("exit_code", task.exitCode)
            object.add("duration", task.duration)
            object.add("peak_memory_bytes", task.peakMemoryBytes.map(Int.init))
            object.add("cpu_seconds", task.cpuSeconds)
            object.add("started", task.started)
            object.add("finished", task.finished)
            if task.allowed { object.add("allowed", true) }
            object.add("log", task.logPath)
            bytes += object.finish()
        }
        bytes += "],\"groups\":[".utf8
        for (position, group) in run.groups.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            var object = JSONObjectWriter()
            object.add("name", group.name)
            object.add("status", group.status.rawValue)
            object.add("reason", group.reason)
            object.add("members", group.members)
            object.add("timed_out", group.timedOut)
            bytes += object.finish()
        }
        bytes += "],\"joins\":[".utf8
        for (position, join) in run.joins.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            var object = JSONObjectWriter()
            object.add("name", join.name)
            object.add("status", join.status.rawValue)
            object.add("reason", join.reason)
            object.add("required", join.required)
            object.add("succeeded", join.succeeded)
            object.add("timed_out", join.timedOut)
            object.add("report_path", join.reportFile.map { run.folder + "/" + $0 })
            bytes += object.finish()
        }
        bytes += "],\"failures\":[".utf8
        for (position, task) in failures.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            var object = JSONObjectWriter()
            object.add("name", task.name)
            object.add("status", task.status.rawValue)
            object.add("reason", task.reason)
            object.add("log", task.logPath)
            if position < Self.failuresWithTails, let file = task.logFile {
                object.add("log_tail", history.logTail(run.id, file: file, lines: FailedTask.summaryTailLines))
            }
            bytes += object.finish()
        }
        bytes += "]}\n".utf8
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The fields `flowrun runs --output json` and `show --output json` share.
    static func headJSON(_ run: RecordedRun) -> JSONObjectWriter {
        var json = JSONObjectWriter()
        json.add("run_id", run.id)
        json.add("state", run.state.rawValue)
        json.add("outcome", run.outcome)
        json.add("workflow", run.workflow)
        json.add("file", run.file)
        json.add("started", run.startTime.map(Self.iso8601))
        json.add("duration", run.duration)
        json.add("exit_code", run.exitCode)
        json.add("stopped_by", run.stoppedBy)
        var counts = JSONObjectWriter()
        for (status, count) in run.counts { counts.add(key: status.rawValue, count) }
        let countsJSON = counts.finish()
        json.add("counts") { $0 += countsJSON }
        json.add("record", run.folder)
        return json
    }

    // MARK: Time

    /// `2026-11-25 15:32:52`, local time.
    static func localTime(_ seconds: Double) -> String {
        calendarText(seconds, local: true, separator: " ")
    }

    /// `2026-11-25T15:32:52.250Z`, as events write `time`.
    static func iso8601(_ seconds: Double) -> String {
        let milliseconds = min(999, max(0, Int((seconds - seconds.rounded(.down)) * 1000)))
        let digits = String(milliseconds)
        return calendarText(seconds, local: false, separator: "T") + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    /// `2026-11-25` + `separator` + `15:32:52`.
    private static func calendarText(_ seconds: Double, local: Bool, separator: String) -> String {
        var whole = time_t(seconds.rounded(.down))
        var parts = tm()
        if local { localtime_r(&whole, &parts) } else { gmtime_r(&whole, &parts) }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))" + separator
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }

    static func now() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
