import FlowrunValues

/// An event as one line of `events.jsonl` and of `--output json`
/// (schema: docs/events-json.md). Every kind writes its keys in the one
/// order the schema lists them, so lines of different kinds line up.
extension RunEvent {
    /// join_completed carries this many members, each value cut to this many bytes.
    static let joinMembersInEvent = 200
    static let joinValueBytesInEvent = 1024

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
        switch payload {
        case .runStarted(let event):
            // Only run_started says the wall-clock time: every other event's is
            // that plus its `elapsed` (docs/events-json.md).
            json.add("time") { ClockText.appendISO8601(timestamp, to: &$0) }
            json.add("elapsed", elapsed)
            json.add("run_id", event.runID)
            json.add("workflow", event.workflow)
            json.add("timeout_seconds", event.timeoutSeconds)
            json.add("max_parallel", event.maxParallel)
            json.add("path", event.path)
            json.add("members", event.members)
            json.add("resumed_from", event.resumedFrom)
            json.add("sized_at_run_time", event.sizedAtRunTime)
            json.add("trigger", event.trigger)
        case .taskWaiting(let event):
            json.add("elapsed", elapsed)
            json.add("task", event.task)
            // Waiting on the run's slots alone, the common case, goes without saying.
            let runSlotsAlone = event.waitingOn.count == 1 && event.waitingOn[0].hasPrefix("max_parallel ")
            json.add("waiting_on", runSlotsAlone ? nil : event.waitingOn)
        case .taskStarted(let event):
            json.add("elapsed", elapsed)
            json.add("task", event.task)
            // An attempt says its number from the second on.
            json.add("attempt", event.attempt == 1 ? nil : event.attempt)
            Self.addStartFields(event, to: &json)
            Self.addLog(event.log, to: &json)
            json.add("probe", event.probe)
        case .taskReady(let event):
            json.add("elapsed", elapsed)
            json.add("task", event.task)
            json.add("after", event.after)
            json.add("probe", event.probe)
        case .taskProgress(let event):
            json.add("elapsed", elapsed)
            json.add("task", event.task)
            json.add("progress", event.percent)
        case .taskSlurm(let event):
            json.add("elapsed", elapsed)
            json.add("task", event.task)
            json.add("slurm_job", event.jobID)
            json.add("state", event.state)
            json.add("node", event.node)
        case .taskOutput(let event):
            json.add("elapsed", elapsed)
            json.add("task", event.task)
            json.add("stream", event.stream.rawValue)
            json.add("line", event.line)
        case .taskRetrying(let event):
            json.add("elapsed", elapsed)
            json.add("task", event.task)
            json.add("status", event.status.rawValue)
            json.add("attempt", event.attempt)
            json.add("exit_code", event.exitCode)
            json.add("signal", event.signal)
            json.add("reason", event.reason)
            json.add("delay", event.delay)
            json.add("memory_bytes", event.memoryBytes.map(Int.init))
        case .taskFinished(let event):
            json.add("elapsed", elapsed)
            json.add("task", event.task)
            // A task's end says its status when it is not a success; an
            // attempt its number from the second on; a first attempt's end no
            // duration (its `elapsed` minus its start's).
            json.add("status", event.status == .succeeded ? nil : event.status.rawValue)
            json.add("attempt", event.attempt == 1 ? nil : event.attempt)
            if let start = event.start {
                json.add("started", start.elapsed)
                Self.addStartFields(start.started, to: &json)
            }
            // A success's exit code is 0 whenever it has one: said by its status.
            json.add("exit_code", event.status == .succeeded && event.exitCode == 0 ? nil : event.exitCode)
            json.add("signal", event.signal)
            json.add("duration", event.attempt == 1 ? nil : event.duration)
            json.add("reason", event.reason)
            Self.addLog(event.log, to: &json)
            json.add("log_tail", event.logTail)
            json.add("allowed", event.allowed ? true : nil)
            json.add("cancelled_by", event.cancelledBy)
            json.add("reused", event.reused?.rawValue)
            json.add("peak_memory_bytes", event.usage?.peakMemoryBytes.map(Int.init))
            json.add("cpu_seconds", event.usage?.cpuSeconds)
        case .groupFinished(let event):
            json.add("elapsed", elapsed)
            json.add("group", event.group)
            json.add("status", event.status.rawValue)
            json.add("duration", event.duration)
            json.add("reason", event.reason)
            json.add("members", event.members)
            json.add("succeeded", event.succeeded)
        case .joinCompleted(let event):
            json.add("elapsed", elapsed)
            json.add("join", event.join)
            json.add("status", event.status.rawValue)
            json.add("duration", event.duration)
            json.add("members", event.members)
            json.add("succeeded", event.succeeded)
            json.add("required", event.required)
            json.add("timed_out", event.timedOut)
            json.add("missing", event.missing)
            json.addRaw("report", "[" + event.report.map { JSONText.object([("name", $0.key), ("value", $0.value)]) }.joined(separator: ",") + "]")
            // Capped: the event names the file holding the report whole.
            event.joinReport?.addMembers(to: &json, limit: Self.joinMembersInEvent, valueBytes: Self.joinValueBytesInEvent)
        case .runFinished(let event):
            json.add("elapsed", elapsed)
            json.add("run_id", event.runID)
            json.add("duration", event.duration)
            json.add("path", event.path)
            var counts = JSONObjectWriter()
            for (status, count) in event.counts { counts.add(key: status.rawValue, count) }
            json.addRaw("counts", counts.result)
            json.add("exit_code", event.exitCode)
        }
        buffer.append(contentsOf: json.finish())
    }

    /// What the engine applied to an attempt, for a reader to check against the plan.
    private static func addStartFields(_ started: TaskStarted, to json: inout JSONObjectWriter) {
        json.add("timeout_seconds", started.timeoutSeconds)
        json.add("group_timeout_seconds", started.groupTimeoutSeconds)
        if let limits = started.limits { json.addRaw("limits", limits) }
        json.add("needs", started.needs)
    }

    /// `path`: the log's path inside the run record.
    private static func addLog(_ log: LogPath?, to json: inout JSONObjectWriter) {
        guard let log else { return }
        guard log.offsetInRecord < log.path.utf8.count else {
            json.add("path", log.path)
            return
        }
        let inRecord = log.path.utf8.dropFirst(log.offsetInRecord)
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
    }
}
