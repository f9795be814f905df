import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - The run record

/// The run folders in a record folder, by name: `latest` (the link to the
/// latest run) and anything else not named like a run id left out.
func runFolders(in directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter(isRunID).sorted()
}

/// Whether `name` is a run id as flowrun makes them now
/// (`20261130-012345.678901-4f1c09a2b7d3`: the start to the microsecond, 48
/// random bits) or made them before (`20261125-133648-e5ff3a90c4d1b827`).
func isRunID(_ name: String) -> Bool {
    name.wholeMatch(of: runIDPattern) != nil
}

/// A run id of either shape (`isRunID`), to find in text.
var runIDPattern: Regex<Substring> { #/\d{8}-\d{6}(?:\.\d{6}-[0-9a-f]{12}|-[0-9a-f]{16})/# }

/// Whether `name` is a run id as flowrun makes them now: 35 characters,
/// the start to the microsecond.
func isMicrosecondRunID(_ name: String) -> Bool {
    name.wholeMatch(of: #/\d{8}-\d{6}\.\d{6}-[0-9a-f]{12}/#) != nil
}

/// A run's folder as the test reads it: `events.jsonl` parsed line by line,
/// `summary.json` parsed.
struct RunRecordFiles {
    let directory: String
    let eventLines: [String]
    /// Each line of events.jsonl parsed (nil where a line is not a JSON object).
    let events: [[String: Any]?]
    let summary: [String: Any]

    init(directory: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        self.directory = directory
        let eventsText = try #require(ProcessProbe.text(directory + "/events.jsonl"), "no events.jsonl in \(directory)", sourceLocation: sourceLocation)
        eventLines = eventsText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        events = Self.derived(eventLines.filter { !$0.isEmpty }.map { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        })
        let summaryData = try #require(FileManager.default.contents(atPath: directory + "/summary.json"), "no summary.json in \(directory)", sourceLocation: sourceLocation)
        summary = try #require(try JSONSerialization.jsonObject(with: summaryData) as? [String: Any], "summary.json is not an object", sourceLocation: sourceLocation)
    }

    var runID: String { (directory as NSString).lastPathComponent }

    /// The events with what their lines leave out put back, as
    /// docs/events-json.md says a reader derives it: a short attempt's one
    /// line opened up into its `task_started` and `task_finished`; every
    /// event's `time` (run_started's plus `elapsed`); a task end's `attempt`
    /// (1), a start's `limits` (one run slot), a wait's `waiting_on` (the run's
    /// slots), `status` (succeeded), a success's `exit_code` (0) and a first
    /// attempt's `duration` (from its start); a log's `path` (inside the record).
    static func derived(_ events: [[String: Any]?]) -> [[String: Any]?] {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var runStart: Date?
        let startElapsed = elapsedAtStart(events)
        var startedAt: [String: Double] = [:]
        var maxParallel: Any?
        var recordPath: String?
        var result: [[String: Any]?] = []
        for event in events {
            guard var event, let kind = event["event"] as? String, let elapsed = double(event["elapsed"]) else {
                result.append(event)
                continue
            }
            if kind == "run_started" {
                recordPath = event["path"] as? String
                runStart = (event["time"] as? String).flatMap(formatter.date(from:))
                maxParallel = event["max_parallel"]
            }
            func time(_ seconds: Double) -> String? { runStart.map { formatter.string(from: $0.addingTimeInterval(seconds - startElapsed)) } }
            if event["time"] == nil { event["time"] = time(elapsed) }
            let task = event["task"] as? String
            // A task's log `path` is inside the record: run_started's `path` + it.
            if kind.hasPrefix("task_"), let path = event["path"] as? String, path.hasPrefix("logs/"), let recordPath {
                event["path"] = recordPath + "/" + path
            }
            if kind == "task_waiting", event["waiting_on"] == nil, let slots = maxParallel {
                event["waiting_on"] = ["max_parallel \(slots)/\(slots)"]
            }
            if kind == "task_started", let task {
                event["attempt"] = event["attempt"] ?? 1
                event["limits"] = event["limits"] ?? maxParallel.map { ["run": $0] }
                startedAt[task] = elapsed
            }
            if kind == "task_finished", let task {
                if let started = double(event["started"]) {
                    var start: [String: Any] = ["event": "task_started", "elapsed": started, "task": task, "attempt": event["attempt"] ?? 1]
                    for key in ["timeout_seconds", "group_timeout_seconds", "limits", "needs", "path"] {
                        start[key] = event[key]
                        event[key] = key == "path" ? event[key] : nil
                    }
                    start["limits"] = start["limits"] ?? maxParallel.map { ["run": $0] }
                    start["time"] = time(started)
                    result.append(start)
                    startedAt[task] = started
                    event["started"] = nil
                }
                event["attempt"] = event["attempt"] ?? 1
                event["status"] = event["status"] ?? "succeeded"
                if event["status"] as? String == "succeeded", integer(event["attempt"]) ?? 0 > 0 { event["exit_code"] = event["exit_code"] ?? 0 }
                if event["duration"] == nil, integer(event["attempt"]) == 1, let started = startedAt[task] {
                    event["duration"] = ((elapsed - started) * 1000).rounded() / 1000
                }
            }
            result.append(event)
        }
        return result
    }

    /// run_started's own `elapsed` (its `time` is the wall clock at that elapsed).
    private static func elapsedAtStart(_ events: [[String: Any]?]) -> Double {
        events.lazy.compactMap { $0 }.first { $0["event"] as? String == "run_started" }.flatMap { double($0["elapsed"]) } ?? 0
    }

    /// Every parsed event of `kind` (about `task`, if given), in order.
    func events(_ kind: String, task: String? = nil) -> [[String: Any]] {
        events.compactMap { $0 }.filter { event in
            event["event"] as? String == kind && (task == nil || (event["task"] as? String) == task)
        }
    }

    /// The names of the tasks that have an event of `kind`, in order.
    func names(_ kind: String) -> [String] {
        events(kind).compactMap { $0["task"] as? String }
    }

    /// The `task_finished` event of `task` (the last, should there be several).
    func finished(_ task: String) -> [String: Any]? { events("task_finished", task: task).last }

    var tasks: [[String: Any]] { summary["tasks"] as? [[String: Any]] ?? [] }

    /// The summary's entry for `task`.
    func task(_ name: String) -> [String: Any]? { tasks.first { $0["name"] as? String == name } }

    /// Group `name`'s entry in summary.json.
    func group(_ name: String) -> [String: Any]? {
        (summary["groups"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    /// The final status of `task` in summary.json.
    func status(_ name: String) -> String? { task(name)?["status"] as? String }

    /// The final status of every task in summary.json.
    var statuses: [String: String] {
        Dictionary(tasks.compactMap { task in
            (task["name"] as? String).flatMap { name in (task["status"] as? String).map { (name, $0) } }
        }, uniquingKeysWith: { first, _ in first })
    }

    func stdout(_ name: String) -> String? { task(name)?["stdout"] as? String }

    func outputs(_ name: String) -> [String: String] {
        (task(name)?["outputs"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
    }

    var exitCode: Int? { integer(summary["exit_code"]) }

    /// `task`'s log: the path summary.json gives it, else the one file in
    /// `logs/SHARD/` named `INDEX-NAME.log` (files are named by the task's index).
    func logPath(_ name: String) -> String {
        if let path = task(name)?["log"] as? String { return path }
        return directory + "/logs/" + (fileStem(name, in: "logs", suffix: ".log") ?? "NONE-" + name) + ".log"
    }

    /// `task`'s log as `flowrun logs` reads it: its entries in
    /// `logs/small.pack` (by `logs/small.index`), then its own file; nil
    /// when it has neither.
    func logText(_ name: String) -> String? {
        let file = logPath(name)
        let stem = String((file as NSString).lastPathComponent.dropLast(".log".count))
        var bytes = Data()
        var found = false
        if let index = ProcessProbe.text(directory + "/logs/small.index"), let pack = FileManager.default.contents(atPath: directory + "/logs/small.pack") {
            for line in index.split(separator: "\n") {
                let fields = line.split(separator: " ", maxSplits: 2)
                guard fields.count == 3, fields[2] == stem, let offset = Int(fields[0]), let length = Int(fields[1]) else { continue }
                bytes += pack[offset..<offset + length]
                found = true
            }
        }
        if let own = FileManager.default.contents(atPath: file) {
            bytes += own
            found = true
        }
        return found ? String(decoding: bytes, as: UTF8.self) : nil
    }

    /// Attempt `attempt`'s `$FLOWRUN_OUTPUT` file of `task`: `outputs/INDEX-NAME.N`.
    func outputsPath(_ name: String, attempt: Int) -> String {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/outputs")) ?? []
        let suffix = "-" + name + ".\(attempt)"
        let matching = files.filter { $0.hasSuffix(suffix) && $0.dropLast(suffix.count).count >= 6 && $0.dropLast(suffix.count).allSatisfy(\.isNumber) }
        return directory + "/outputs/" + (matching.count == 1 ? matching[0] : "NONE-" + name + ".\(attempt)")
    }

    /// `SHARD/INDEX-NAME` of the one file in `folder`'s shards (`logs/000/`)
    /// named `INDEX-NAME` + `suffix` (a simple name: readable parts of long
    /// or unusual names are shortened).
    func fileStem(_ name: String, in folder: String, suffix: String) -> String? {
        let shards = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/" + folder)) ?? []
        let files = shards.flatMap { shard in
            ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/" + folder + "/" + shard)) ?? []).map { (shard, $0) }
        }
        let stems = files.filter { $0.1.hasSuffix(suffix) }.map { ($0.0, String($0.1.dropLast(suffix.count))) }.filter { _, stem in
            guard let dash = stem.firstIndex(of: "-") else { return false }
            return stem[..<dash].count >= 6 && stem[..<dash].allSatisfy(\.isNumber) && stem[stem.index(after: dash)...] == name
        }
        return stems.count == 1 ? stems[0].0 + "/" + stems[0].1 : nil
    }

    /// Compact text for failure messages.
    var overview: String {
        "record \(directory)\n" + eventLines.suffix(60).joined(separator: "\n")
    }
}

/// A JSON number as an Int (JSONSerialization's numbers bridge differently per platform).
func integer(_ value: Any?) -> Int? {
    switch value {
    case let value as Int: return value
    case let value as Double: return Int(exactly: value)
    case let value as NSNumber: return value.intValue
    default: return nil
    }
}

/// A JSON number as a Double.
func double(_ value: Any?) -> Double? {
    switch value {
    case let value as Double: return value
    case let value as Int: return Double(value)
    case let value as NSNumber: return value.doubleValue
    default: return nil
    }
}
