#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import FlowrunValues

/// Something that happened during a run. The engine emits these; reporters
/// (plain, json, tty) and the run record's `events.jsonl` consume the same
/// stream, so every output mode carries the same events.
package struct RunEvent: Sendable {
    package enum Kind: String, Sendable, CaseIterable {
        case runStarted = "run_started"
        case taskWaiting = "task_waiting"
        case taskStarted = "task_started"
        case taskProgress = "task_progress"
        /// With `--stream` and `--output json` only (not in events.jsonl): a line a task printed.
        case taskOutput = "task_output"
        case taskRetrying = "task_retrying"
        case taskFinished = "task_finished"
        case groupFinished = "group_finished"
        case joinCompleted = "join_completed"
        case runFinished = "run_finished"
    }

    package var kind: Kind
    /// Seconds since the run started.
    package var elapsed: Double
    /// Wall-clock time, seconds since the epoch.
    package var timestamp: Double
    /// The task, group or join the event is about (nil for run events).
    package var subject: String?
    package var status: TaskStatus?
    package var attempt: Int?
    package var exitCode: Int?
    package var signal: Int? { get { rare?.fields.signal } set { withRare(newValue == nil) { $0.signal = newValue } } }
    package var duration: Double?
    package var progress: Int? { get { rare?.fields.progress } set { withRare(newValue == nil) { $0.progress = newValue } } }
    package var reason: String? { get { rare?.fields.reason } set { withRare(newValue == nil) { $0.reason = newValue } } }
    /// task_finished that stands for its attempt's `task_started` too (the
    /// run record writes one line for an attempt shorter than a moment,
    /// `RunRecord`): when the attempt started, in seconds since the run started.
    package var started: Double?
    /// run_started: the run's slots (`max_parallel`): what a task holds when
    /// its task_started has no `limits`.
    package var maxParallel: Int? { get { rare?.fields.maxParallel } set { withRare(newValue == nil) { $0.maxParallel = newValue } } }
    /// task_started: the attempt's deadline and its group's, in seconds, as
    /// the engine started them (nil: none); run_started: the run's deadline.
    package var timeoutSeconds: Double? { get { rare?.fields.timeoutSeconds } set { withRare(newValue == nil) { $0.timeoutSeconds = newValue } } }
    package var groupTimeoutSeconds: Double? { get { rare?.fields.groupTimeoutSeconds } set { withRare(newValue == nil) { $0.groupTimeoutSeconds = newValue } } }
    /// task_started: the slots the task holds, a JSON object shaped like a
    /// plan step's `limits` (`{"run":4,"group":{…},"semaphores":[…]}`); nil
    /// when it holds one of the run's slots and nothing else (the common
    /// case, left out of the line), `{}` when it holds none.
    package var limits: String? { get { rare?.fields.limits } set { withRare(newValue == nil) { $0.limits = newValue } } }
    /// task_started, first attempt: what it waited for (its needs, and its
    /// group's), by name; nil when none. Timelines draw these as arrows.
    package var needs: [String]? { get { rare?.fields.needs } set { withRare(newValue == nil) { $0.needs = newValue } } }
    /// What a waiting task waits on: `["db 1/1"]`.
    package var waitingOn: [String]? { get { rare?.fields.waitingOn } set { withRare(newValue == nil) { $0.waitingOn = newValue } } }
    /// task_retrying: seconds until the next attempt.
    package var delay: Double? { get { rare?.fields.delay } set { withRare(newValue == nil) { $0.delay = newValue } } }
    /// task_finished: the log file; run_started: the run folder.
    package var path: String?
    /// task_started / task_finished: where in `path` the log's path inside
    /// the run record starts (`logs/000/000042-NAME.log`, after the record's
    /// folder and its slash): what the JSON line says as `path`, the run
    /// record's own path being run_started's. A count, not a second string,
    /// made for every task.
    package var pathInRecordOffset: Int?
    /// task_finished of a failure: the last lines of its log.
    package var logTail: [String]? { get { rare?.fields.logTail } set { withRare(newValue == nil) { $0.logTail = newValue } } }
    /// join_completed / group_finished.
    package var members: Int? { get { rare?.fields.members } set { withRare(newValue == nil) { $0.members = newValue } } }
    package var succeeded: Int? { get { rare?.fields.succeeded } set { withRare(newValue == nil) { $0.succeeded = newValue } } }
    package var required: Int? { get { rare?.fields.required } set { withRare(newValue == nil) { $0.required = newValue } } }
    package var timedOut: Bool? { get { rare?.fields.timedOut } set { withRare(newValue == nil) { $0.timedOut = newValue } } }
    package var missing: [String]? { get { rare?.fields.missing } set { withRare(newValue == nil) { $0.missing = newValue } } }
    /// join_completed: what it reports, in order: name → value (whole, not shortened).
    package var report: [(key: String, value: String)]? { get { rare?.fields.report } set { withRare(newValue == nil) { $0.report = newValue } } }
    /// join_completed: the members one by one with their stash (SPEC §5).
    package var joinReport: JoinReport? { get { rare?.fields.joinReport } set { withRare(newValue == nil) { $0.joinReport = newValue } } }
    /// task_output: `stdout` or `stderr`, and the line (without its line break).
    package var stream: String? { get { rare?.fields.stream } set { withRare(newValue == nil) { $0.stream = newValue } } }
    package var line: String? { get { rare?.fields.line } set { withRare(newValue == nil) { $0.line = newValue } } }
    /// task_finished of a failure that `continue_on_error` allows.
    package var allowed: Bool? { get { rare?.fields.allowed } set { withRare(newValue == nil) { $0.allowed = newValue } } }
    /// task_finished of a member a join cancelled: that join.
    package var cancelledBy: String? { get { rare?.fields.cancelledBy } set { withRare(newValue == nil) { $0.cancelledBy = newValue } } }
    /// run_started / run_finished.
    package var runID: String? { get { rare?.fields.runID } set { withRare(newValue == nil) { $0.runID = newValue } } }
    package var workflow: String? { get { rare?.fields.workflow } set { withRare(newValue == nil) { $0.workflow = newValue } } }
    package var counts: [(status: TaskStatus, count: Int)]? { get { rare?.fields.counts } set { withRare(newValue == nil) { $0.counts = newValue } } }
    package var runExitCode: Int? { get { rare?.fields.runExitCode } set { withRare(newValue == nil) { $0.runExitCode = newValue } } }
    /// task_finished: `restored` or `up_to_date` when the task succeeded without running.
    package var reused: String? { get { rare?.fields.reused } set { withRare(newValue == nil) { $0.reused = newValue } } }
    /// run_started: the run this one resumes.
    package var resumedFrom: String? { get { rare?.fields.resumedFrom } set { withRare(newValue == nil) { $0.resumedFrom = newValue } } }
    /// run_started: groups whose fan-out's items are known only once it starts (not counted in `members`).
    package var sizedAtRunTime: [String]? { get { rare?.fields.sizedAtRunTime } set { withRare(newValue == nil) { $0.sizedAtRunTime = newValue } } }

    /// The fields most events leave nil, behind one reference: an event is
    /// copied several times on its way to the reporters, and a million
    /// short members' events were mostly copies of ~30 empty fields.
    private var rare: RareBox?

    private final class RareBox: @unchecked Sendable {
        // @unchecked: written only while uniquely referenced (`setRare`).
        var fields: RareFields
        init(_ fields: RareFields) { self.fields = fields }
    }

    private struct RareFields {
        var signal: Int?
        var progress: Int?
        var reason: String?
        var maxParallel: Int?
        var timeoutSeconds: Double?
        var groupTimeoutSeconds: Double?
        var limits: String?
        var needs: [String]?
        var waitingOn: [String]?
        var delay: Double?
        var logTail: [String]?
        var members: Int?
        var succeeded: Int?
        var required: Int?
        var timedOut: Bool?
        var missing: [String]?
        var report: [(key: String, value: String)]?
        var joinReport: JoinReport?
        var stream: String?
        var line: String?
        var allowed: Bool?
        var cancelledBy: String?
        var runID: String?
        var workflow: String?
        var counts: [(status: TaskStatus, count: Int)]?
        var runExitCode: Int?
        var reused: String?
        var resumedFrom: String?
        var sizedAtRunTime: [String]?
    }

    /// Changes a rare field; setting one to nil allocates nothing.
    private mutating func withRare(_ settingNil: Bool, _ change: (inout RareFields) -> Void) {
        if rare == nil {
            guard !settingNil else { return }
            rare = RareBox(RareFields())
        } else if !isKnownUniquelyReferenced(&rare) {
            rare = RareBox(rare!.fields)
        }
        change(&rare!.fields)
    }

    /// join_completed carries this many members, each value cut to this many bytes.
    static let joinMembersInEvent = 200
    static let joinValueBytesInEvent = 1024

    package init(_ kind: Kind, elapsed: Double, subject: String? = nil) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        self.init(kind, elapsed: elapsed, timestamp: Double(now.tv_sec) + Double(now.tv_nsec) / 1e9, subject: subject)
    }

    /// An event whose wall-clock time the caller knows: the engine gives
    /// the run's start plus `elapsed`, as a reader of `events.jsonl` computes it.
    package init(_ kind: Kind, elapsed: Double, timestamp: Double, subject: String? = nil) {
        self.kind = kind
        self.elapsed = elapsed
        self.timestamp = timestamp
        self.subject = subject
    }

    /// One line of `events.jsonl` and of `--output json` (schema: docs/events-json.md).
    package var jsonLine: String {
        var bytes: [UInt8] = []
        appendJSONLine(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `jsonLine`'s bytes (no line break) to `buffer`.
    package func appendJSONLine(to buffer: inout [UInt8]) {
        // Built on its own, then appended: a writer that took the buffer
        // over (swapped in and back) was measured copying all of it at every
        // event, 2.1 µs an event once 60 KB were waiting to be written.
        var json = JSONObjectWriter()
        json.add("event", kind.rawValue)
        // Only run_started says the wall-clock time: every other event's is
        // that plus its `elapsed` (docs/events-json.md).
        if kind == .runStarted { json.add("time") { ClockText.appendISO8601(timestamp, to: &$0) } }
        json.add("elapsed", elapsed)
        json.add("run_id", runID)
        json.add("workflow", workflow)
        let subjectKey: StaticString
        switch kind {
        case .groupFinished: subjectKey = "group"
        case .joinCompleted: subjectKey = "join"
        default: subjectKey = "task"
        }
        json.add(subjectKey, subject)
        let isTaskEnd = kind == .taskStarted || kind == .taskFinished
        // A task's end says its status when it is not a success; an attempt
        // its number from the second on; a first attempt's end no duration
        // (its `elapsed` minus its start's).
        json.add("status", kind == .taskFinished && status == .succeeded ? nil : status?.rawValue)
        json.add("attempt", isTaskEnd && attempt == 1 ? nil : attempt)
        json.add("started", started)
        json.add("timeout_seconds", timeoutSeconds)
        json.add("group_timeout_seconds", groupTimeoutSeconds)
        json.add("max_parallel", maxParallel)
        if let limits { json.addRaw("limits", limits) }
        json.add("needs", needs)
        // A success's exit code is 0 whenever it has one: said by its status.
        json.add("exit_code", kind == .taskFinished && status == .succeeded && exitCode == 0 ? nil : exitCode)
        json.add("signal", signal)
        json.add("duration", kind == .taskFinished && attempt == 1 ? nil : duration)
        json.add("progress", progress)
        json.add("reason", reason)
        // Waiting on the run's slots alone, the common case, goes without saying.
        json.add("waiting_on", waitingOn.map { $0.count == 1 && $0[0].hasPrefix("max_parallel ") } == true ? nil : waitingOn)
        json.add("delay", delay)
        if isTaskEnd, let path, let offset = pathInRecordOffset, offset < path.utf8.count {
            let inRecord = path.utf8.dropFirst(offset)
            // Letters, digits and `_.-+,=@/` (RecordFileName): nothing to escape.
            if inRecord.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
                json.add("path") { bytes in
                    bytes.append(UInt8(ascii: "\""))
                    bytes.append(contentsOf: inRecord)
                    bytes.append(UInt8(ascii: "\""))
                }
            } else {
                json.add("path", String(decoding: inRecord, as: UTF8.self))
            }
        } else {
            json.add("path", path)
        }
        json.add("log_tail", logTail)
        json.add("members", members)
        json.add("succeeded", succeeded)
        json.add("required", required)
        json.add("timed_out", timedOut)
        json.add("missing", missing)
        if let report {
            json.addRaw("report", "[" + report.map { JSONText.object([("name", $0.key), ("value", $0.value)]) }.joined(separator: ",") + "]")
        }
        if let joinReport {
            // Capped: the event names the file holding the report whole.
            joinReport.addMembers(to: &json, limit: Self.joinMembersInEvent, valueBytes: Self.joinValueBytesInEvent)
        }
        json.add("stream", stream)
        json.add("line", line)
        json.add("allowed", allowed)
        json.add("cancelled_by", cancelledBy)
        json.add("reused", reused)
        json.add("resumed_from", resumedFrom)
        json.add("sized_at_run_time", sizedAtRunTime)
        if let counts {
            var object = JSONObjectWriter()
            for (status, count) in counts { object.add(key: status.rawValue, count) }
            json.addRaw("counts", object.result)
        }
        json.add("exit_code", runExitCode)
        buffer.append(contentsOf: json.finish())
    }
}

/// A timestamp's date and time of day as text, to the millisecond.
package struct ClockText {
    /// `2026-11-22`
    var date: String
    /// `14:03:07.250`
    package var time: String

    package init(_ seconds: Double, local: Bool) {
        let (second, milliseconds) = Self.split(seconds)
        let cached = Self.cachedSecond(second, local: local)
        date = cached.date
        time = cached.time + Self.millisecondTexts[milliseconds]
    }

    /// `14:03:07.250`, appended to `text`.
    package static func appendTime(_ seconds: Double, local: Bool, to text: inout String) {
        let (second, milliseconds) = split(seconds)
        text += cachedSecond(second, local: local).time
        text += millisecondTexts[milliseconds]
    }

    /// `2026-11-22T02:51:03.123Z` (UTC), as JSON: quoted.
    static func appendISO8601(_ seconds: Double, to bytes: inout [UInt8]) {
        let (second, milliseconds) = split(seconds)
        let cached = cachedSecond(second, local: false)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: cached.date.utf8)
        bytes.append(UInt8(ascii: "T"))
        bytes.append(contentsOf: cached.time.utf8)
        bytes.append(contentsOf: millisecondTexts[milliseconds].utf8)
        bytes.append(UInt8(ascii: "Z"))
        bytes.append(UInt8(ascii: "\""))
    }

    private static func split(_ seconds: Double) -> (second: Int, milliseconds: Int) {
        let whole = Int(seconds.rounded(.down))
        return (whole, min(999, max(0, Int((seconds - Double(whole)) * 1000))))
    }

    /// Several timestamps per task, nearly all within a second of the last:
    /// the calendar part is worked out once a second.
    private static func cachedSecond(_ second: Int, local: Bool) -> Second {
        lastSecond.withLock { cache in
            let slot = local ? 1 : 0
            if cache[slot].second != second {
                cache[slot] = calendar(second, local: local)
            }
            return cache[slot]
        }
    }

    private struct Second {
        var second: Int
        var date: String
        /// `14:03:07`
        var time: String
    }

    private static let lastSecond = Mutex([Second(second: -1, date: "", time: ""), Second(second: -1, date: "", time: "")])

    /// `.000` … `.999`
    private static let millisecondTexts: [String] = (0..<1000).map { "." + padded($0, 3) }

    private static func calendar(_ second: Int, local: Bool) -> Second {
        var whole = time_t(second)
        var parts = tm()
        if local { localtime_r(&whole, &parts) } else { gmtime_r(&whole, &parts) }
        return Second(
            second: second,
            date: "\(parts.tm_year + 1900)-\(padded(Int(parts.tm_mon) + 1, 2))-\(padded(Int(parts.tm_mday), 2))",
            time: "\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2))")
    }

    /// `value` with leading zeros to `width` digits.
    private static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.utf8.count)) + digits
    }
}

/// Where events go. Called on the engine's serial queue, one event at a time.
package protocol RunReporter: Sendable {
    func report(_ event: RunEvent)
    /// Called once after `run_finished`, to flush.
    func finish()
    /// With `--stream` (and, for the live view's rows, on a terminal): one
    /// whole line a task printed on stdout or (`isError`) stderr, as it
    /// arrives. Called on the output thread, not the engine's queue.
    func output(task: String, line: String, isError: Bool)
}

extension RunReporter {
    package func output(task: String, line: String, isError: Bool) {}
}
