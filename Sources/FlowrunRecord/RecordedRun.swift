#if canImport(Glibc)
import Glibc
#endif
package import FlowrunEvents
import FlowrunModel
import FlowrunValues

/// One run as its record tells it (`.flowrun/runs/RUN_ID/`): for a finished
/// run, `summary.json`; for a run still going (or one whose flowrun was
/// killed before the summary), `events.jsonl` as far as it goes.
///
/// What `flowrun runs`, `show` and `logs` print, and what `resume` needs:
/// each task's status, its log and `$FLOWRUN_OUTPUT` files, its stash
/// (stdout and outputs). The record is masked already (secrets as `***`);
/// nothing here unmasks it: the stash read from `summary.json` is the
/// masked one, while an outputs file (`Task.outputsFile(attempt:)`, read
/// with `RunHistory.recordFile`) holds what the task wrote.
///
///     let history = try RunHistory(path: ".flowrun/runs")
///     let run = try RecordedRun.read(history.resolve(nil), in: history)
///     for task in run.tasks where task.status == .succeeded { … }
package struct RecordedRun: Sendable {
    /// How far the run got.
    package enum State: String, Sendable {
        /// A flowrun process still holds the run's folder.
        case running
        /// `summary.json` is there.
        case finished
        /// Neither: flowrun was killed (or the machine went down) before the
        /// summary; a `run_killed` line says so when the supervisor saw it.
        case interrupted
    }

    package struct Task: Sendable {
        package var name: String
        package var status: TaskStatus
        /// Why a status is not `succeeded`: `exit 3`, `timed out after 5s`, `join_settled`, …
        package var reason: String?
        /// The group of a group's member.
        package var group: String?
        /// A fan-out member's item.
        package var item: String?
        package var isFinally = false
        /// Attempts started so far (0: never started).
        package var attempts = 0
        package var exitCode: Int?
        package var duration: Double?
        /// What its last attempt used (SPEC §13): the most memory at once, and CPU seconds.
        package var peakMemoryBytes: UInt64?
        package var cpuSeconds: Double?
        /// Seconds since the run started: its first attempt's start, its end.
        package var started: Double?
        package var finished: Double?
        /// The log as the record names it (`BASE/RUN_ID/logs/000/000042-NAME.log`);
        /// nil when it printed nothing (or, live, has not started).
        package var logPath: String?
        /// Its files' name in the record: `000042-NAME` (logs/SHARD/NAME.log, outputs/NAME.N).
        package var recordName: String?
        /// Its stash (from `summary.json`; nil while running).
        package var stdout: String?
        package var outputs: [(key: String, value: String)] = []
        /// A failure `continue_on_error` allowed (known from events only).
        package var allowed = false

        package init(name: String, status: TaskStatus) {
            self.name = name
            self.status = status
        }

        /// The log's file name in its shard of `logs/` (`RunHistory.openLog` finds the shard).
        package var logFile: String? {
            if let logPath, let slash = logPath.lastIndex(of: "/") { return String(logPath[logPath.index(after: slash)...]) }
            return logPath ?? recordName.map { $0 + ".log" }
        }

        /// `outputs/000042-NAME.N`: attempt N's `$FLOWRUN_OUTPUT` file, relative to the run folder.
        package func outputsFile(attempt: Int) -> String? {
            let stem = recordName ?? logFile.flatMap { $0.hasSuffix(".log") ? String($0.dropLast(4)) : nil }
            return stem.map { "outputs/" + $0 + "." + String(attempt) }
        }
    }

    package struct Group: Sendable {
        package var name: String
        package var status: TaskStatus
        package var reason: String?
        package var members: [String]
        package var timedOut = false
        package var started: Double?
        package var finished: Double?
    }

    package struct Join: Sendable {
        package var name: String
        package var status: TaskStatus
        package var reason: String?
        package var members: [String]
        package var required: Int?
        package var succeeded: Int?
        package var timedOut = false
        /// `joins/JOIN.json`, relative to the run folder, once the join completed.
        package var reportFile: String?
    }

    package var id: String
    /// The run folder as the user names it: `BASE/RUN_ID`.
    package var folder: String
    package var state: State
    package var workflow: String?
    /// The workflow file (from the summary).
    package var file: String?
    /// When it started, seconds since the epoch.
    package var startTime: Double?
    /// How long it ran (a live run: so far; an interrupted one: to its last event).
    package var duration: Double?
    package var exitCode: Int?
    /// `signal`, `run_timeout`, `fail_fast`: what stopped the run early;
    /// `killed`: flowrun itself was (the engine or the pid the shell knows).
    package var stoppedBy: String?
    /// Tasks per status, in `TaskStatus` order.
    package var counts: [(status: TaskStatus, count: Int)] = []
    /// Tasks the run knew at its start (fan-out members made later not counted).
    package var plannedTasks: Int?
    /// Every task (live: every task seen so far), in the record's order.
    package var tasks: [Task] = []
    package var groups: [Group] = []
    package var joins: [Join] = []

    /// What reading the record takes: the head only (`flowrun runs`), or everything.
    package enum Detail: Sendable {
        case head, everything
    }

    /// Reads run `id` in `history`.
    package static func read(_ id: String, in history: RunHistory, detail: Detail = .everything) throws(RunHistory.Problem) -> RecordedRun {
        let folder = history.openFolder(id)
        guard folder >= 0 else {
            throw RunHistory.Problem(description: "cannot open \(history.folderPath(id)): \(String(cString: strerror(errno)))")
        }
        defer { close(folder) }
        var run = RecordedRun(id: id, folder: history.folderPath(id), state: .interrupted)
        let live = RunHistory.isLive(id, in: history.descriptor)
        if let summary = RecordFile.read(folder, "summary.json", limit: detail == .head ? 64 * 1024 : nil) {
            run.state = .finished
            guard run.readSummary(summary, headOnly: detail == .head) else {
                throw RunHistory.Problem(description: "\(run.folder)/summary.json is not a flowrun summary")
            }
            if let first = RecordFile.firstLine(folder, "events.jsonl"), let event = JSONValue.parse(bytes: Array(first)) {
                run.startTime = event["time"]?.string.flatMap(Self.epochSeconds)
                run.plannedTasks = event["members"]?.int
            }
        } else {
            run.state = live ? .running : .interrupted
            run.readEvents(RecordFile.read(folder, "events.jsonl", limit: nil) ?? [])
            if live, let startTime = run.startTime {
                var now = timespec()
                clock_gettime(CLOCK_REALTIME, &now)
                run.duration = max(0, Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 - startTime)
            }
        }
        return run
    }

    /// The task named `name` (the last, were two to share it).
    package func task(named name: String) -> Task? {
        tasks.last { $0.name == name }
    }

    /// `succeeded`, `failed`, `timed out`, `stopped by a signal`, `killed`, `running`, `did not finish`.
    package var outcome: String {
        switch state {
        case .running: return "running"
        case .interrupted: return stoppedBy == "killed" ? "killed" : "did not finish"
        case .finished:
            switch stoppedBy {
            case "killed": return "killed"
            case "signal": return "stopped by a signal"
            case "run_timeout": return "timed out"
            default: return exitCode == 0 ? "succeeded" : "failed"
            }
        }
    }

    /// `2026-11-22T14:03:07.250Z` as seconds since the epoch.
    static func epochSeconds(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20 else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int32(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19) else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let whole = timegm(&parts)
        let fraction = bytes.count >= 24 && bytes[19] == UInt8(ascii: ".") ? Double(number(20..<23) ?? 0) / 1000 : 0
        return Double(whole) + fraction
    }
}

extension RecordedRun {
    /// ` (did you mean 'build'?)` when a task of the run is close to `name`, else "".
    package func suggestion(for name: String) -> String {
        Suggestion.hint(for: TerminalText.escapedName(name), in: tasks.lazy.map { TerminalText.escapedName($0.name) })
    }
}

extension RecordedRun {
    /// A name as messages show it: control characters escaped (TerminalText).
    package static func shown(_ name: String) -> String {
        TerminalText.escapedName(name)
    }

    /// Why `task` has no log: `did not run (skipped)` or `printed nothing`.
    package static func whyNoLog(_ task: Task) -> String {
        task.attempts == 0 ? "did not run (\(task.status.rawValue.replacingAll("_", with: " ")))" : "printed nothing"
    }
}
