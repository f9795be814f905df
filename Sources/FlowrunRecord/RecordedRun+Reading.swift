import FlowrunEvents
import FlowrunValues
/// Reading `summary.json` (a finished run) and `events.jsonl` (a live or
/// interrupted one) into a `RecordedRun`.
extension RecordedRun {
    // MARK: summary.json

    /// Fills the run from `summary.json`'s bytes. With `headOnly`, only its
    /// first line is read — the run's fields and counts, before `"tasks"` —
    /// so listing runs never reads a 20,000-task summary whole. False when
    /// the bytes are not a summary.
    mutating func readSummary(_ bytes: [UInt8], headOnly: Bool) -> Bool {
        let document: JSONValue?
        if headOnly {
            let marker = Array(",\"tasks\":[".utf8)
            let end = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            var head = Array(bytes[..<end])
            guard head.count >= marker.count, head.suffix(marker.count).elementsEqual(marker) else { return false }
            head.removeLast(marker.count)
            head.append(UInt8(ascii: "}"))
            document = JSONValue.parse(bytes: head)
        } else {
            document = JSONValue.parse(bytes: bytes)
        }
        guard let document, document["run_id"] != nil else { return false }
        workflow = document["workflow"]?.string
        file = document["file"]?.string
        exitCode = document["exit_code"]?.int
        duration = document["duration"]?.double
        stoppedBy = document["stopped_by"]?.string
        counts = Self.counts(document["counts"])
        guard !headOnly else { return true }
        for entry in document["tasks"]?.array ?? [] {
            guard let name = entry["name"]?.string else { continue }
            var task = Task(name: name, status: entry["status"]?.string.flatMap(TaskStatus.init(rawValue:)) ?? .pending)
            task.reason = entry["reason"]?.string
            task.started = entry["started"]?.double
            task.finished = entry["finished"]?.double
            task.isFinally = entry["phase"]?.string == "finally"
            task.group = entry["group"]?.string
            task.item = entry["item"]?.string
            task.attempts = entry["attempts"]?.int ?? 0
            task.exitCode = entry["exit_code"]?.int
            task.duration = entry["duration"]?.double
            task.peakMemoryBytes = entry["peak_memory_bytes"]?.int.map { UInt64(max(0, $0)) }
            task.cpuSeconds = entry["cpu_seconds"]?.double
            task.logPath = entry["log"]?.string
            task.recordName = entry["record_name"]?.string
            task.stdout = entry["stdout"]?.string
            task.outputs = (entry["outputs"]?.members ?? []).compactMap { member in member.value.string.map { (member.key, $0) } }
            tasks.append(task)
        }
        // A big fan-out's plain successes have no row: made from the group's names and items.
        var named: Set<String>?
        for entry in document["groups"]?.array ?? [] where (entry["rows_left_out"]?.int ?? 0) > 0 {
            guard let group = entry["name"]?.string, let names = entry["members"]?.array, let items = entry["items"]?.array else { continue }
            if named == nil { named = Set(tasks.map(\.name)) }
            for (offset, member) in names.enumerated() {
                guard let name = member.string, !named!.contains(name) else { continue }
                var task = Task(name: name, status: .succeeded)
                task.group = group
                task.item = offset < items.count ? items[offset].string : nil
                task.attempts = 1
                task.exitCode = 0
                tasks.append(task)
            }
        }
        for entry in document["groups"]?.array ?? [] {
            guard let name = entry["name"]?.string else { continue }
            groups.append(Group(
                name: name, status: entry["status"]?.string.flatMap(TaskStatus.init(rawValue:)) ?? .pending,
                reason: entry["reason"]?.string, members: (entry["members"]?.array ?? []).compactMap(\.string),
                timedOut: entry["timed_out"]?.bool ?? false, started: entry["started"]?.double, finished: entry["finished"]?.double))
        }
        for entry in document["joins"]?.array ?? [] {
            guard let name = entry["name"]?.string else { continue }
            var join = Join(
                name: name, status: entry["status"]?.string.flatMap(TaskStatus.init(rawValue:)) ?? .pending,
                reason: entry["reason"]?.string, members: (entry["members"]?.array ?? []).compactMap(\.string),
                required: entry["required"]?.int, succeeded: entry["succeeded"]?.int, timedOut: entry["timed_out"]?.bool ?? false)
            if join.status.isFinal, join.status != .skipped, join.status != .cancelled { join.reportFile = "joins/" + name + ".json" }
            joins.append(join)
        }
        return true
    }

    /// `{"succeeded": 3, "failed": 1}` in `TaskStatus` order.
    private static func counts(_ value: JSONValue?) -> [(status: TaskStatus, count: Int)] {
        let members = value?.members ?? []
        return TaskStatus.allCases.compactMap { status in
            members.first { $0.key == status.rawValue }?.value.int.map { (status, $0) }
        }
    }

    // MARK: events.jsonl

    /// Fills the run from its events, as far as they go: the state of each
    /// task seen so far. A last line cut short (a write in progress) is left out.
    mutating func readEvents(_ bytes: [UInt8]) {
        var positions: [String: Int] = [:]
        var groupPositions: [String: Int] = [:]
        var lastElapsed: Double?
        var recordPath: String?
        /// A task's log path is the record's (run_started's `path`) + its own.
        func inRecord(_ path: String) -> String {
            guard let recordPath, !path.hasPrefix("/"), path.hasPrefix("logs/") else { return path }
            return recordPath + "/" + path
        }
        var finalCounts: JSONValue?
        func position(of name: String) -> Int {
            if let index = positions[name] { return index }
            tasks.append(Task(name: name, status: .pending))
            positions[name] = tasks.count - 1
            return tasks.count - 1
        }
        var start = bytes.startIndex
        while let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
            let line = bytes[start..<end]
            start = end + 1
            guard let event = JSONValue.parse(bytes: Array(line)), let kind = event["event"]?.string else { continue }
            let elapsed = event["elapsed"]?.double
            // The latest, not the last line's: a start held back a moment may come after later lines.
            if let elapsed { lastElapsed = max(lastElapsed ?? elapsed, elapsed) }
            let status = event["status"]?.string.flatMap(TaskStatus.init(rawValue:))
            switch kind {
            case "run_started":
                recordPath = event["path"]?.string
                workflow = event["workflow"]?.string
                startTime = event["time"]?.string.flatMap(Self.epochSeconds)
                plannedTasks = event["members"]?.int
            case "task_waiting":
                guard let name = event["task"]?.string else { continue }
                let index = position(of: name)
                if tasks[index].status == .pending {
                    tasks[index].status = .waiting
                } else if tasks[index].status == .running {
                    // A service that exited before it was ready, waiting for its port's closed
                    // connections to go: nothing of it runs until its `task_started` again.
                    tasks[index].status = .waiting
                    let why = (event["waiting_on"]?.array ?? []).compactMap(\.string).joined(separator: ", ")
                    tasks[index].reason = why.isEmpty ? nil : "waiting: " + why
                }
            case "task_started":
                guard let name = event["task"]?.string else { continue }
                let index = position(of: name)
                tasks[index].status = .running
                tasks[index].attempts = event["attempt"]?.int ?? 1
                if tasks[index].started == nil { tasks[index].started = elapsed }
                if let path = event["path"]?.string { tasks[index].logPath = inRecord(path) }
                tasks[index].reason = nil
            case "task_retrying":
                guard let name = event["task"]?.string else { continue }
                let index = position(of: name)
                tasks[index].reason = event["reason"]?.string.map { "retrying after: " + $0 }
            case "task_finished":
                guard let name = event["task"]?.string else { continue }
                let index = position(of: name)
                // Left out of the line when they go without saying (docs/events-json.md).
                let finalStatus = status ?? .succeeded
                let attempt = event["attempt"]?.int ?? 1
                if tasks[index].started == nil { tasks[index].started = event["started"]?.double }
                tasks[index].status = finalStatus
                tasks[index].reason = event["reason"]?.string
                tasks[index].exitCode = event["exit_code"]?.int ?? (finalStatus == .succeeded && attempt > 0 ? 0 : nil)
                tasks[index].duration = event["duration"]?.double
                if tasks[index].duration == nil, attempt == 1, let elapsed, let started = tasks[index].started {
                    tasks[index].duration = max(0, elapsed - started)
                }
                tasks[index].finished = elapsed
                tasks[index].allowed = event["allowed"]?.bool ?? false
                tasks[index].attempts = attempt
                tasks[index].peakMemoryBytes = event["peak_memory_bytes"]?.int.map { UInt64(max(0, $0)) }
                tasks[index].cpuSeconds = event["cpu_seconds"]?.double
                if let path = event["path"]?.string { tasks[index].logPath = inRecord(path) }
            case "group_finished":
                guard let name = event["group"]?.string else { continue }
                let group = Group(name: name, status: status ?? .failed, reason: event["reason"]?.string, members: [],
                                  timedOut: event["reason"]?.string == "group_timeout", started: nil, finished: elapsed)
                if let index = groupPositions[name] { groups[index] = group } else {
                    groupPositions[name] = groups.count
                    groups.append(group)
                }
            case "join_completed":
                guard let name = event["join"]?.string else { continue }
                joins.append(Join(
                    name: name, status: status ?? .failed, reason: event["reason"]?.string, members: [],
                    required: event["required"]?.int, succeeded: event["succeeded"]?.int,
                    timedOut: event["timed_out"]?.bool ?? false, reportFile: "joins/" + name + ".json"))
            case "run_finished":
                exitCode = event["exit_code"]?.int
                duration = event["duration"]?.double
                finalCounts = event["counts"]
            case "run_killed":
                // The supervisor's line for an engine killed mid-run.
                exitCode = event["exit_code"]?.int
                stoppedBy = "killed"
            default:
                break
            }
        }
        if duration == nil { duration = lastElapsed }
        if let finalCounts {
            counts = Self.counts(finalCounts)
        } else {
            var tally: [TaskStatus: Int] = [:]
            for task in tasks { tally[task.status, default: 0] += 1 }
            counts = TaskStatus.allCases.compactMap { status in tally[status].map { (status, $0) } }
        }
    }
}
