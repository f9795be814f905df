import FlowrunValues

/// The run as Chrome trace event JSON, for Perfetto (ui.perfetto.dev) or
/// `chrome://tracing`:
///
/// - one thread per slot lane (`slot 1` …): each attempt a complete slice
///   (`ph: X`) named after its task, with status, attempt, exit code,
///   signal, reason, group and semaphores in `args`;
/// - `waiting 1` … threads: each wait for slots or semaphores (`cat: wait`,
///   `args.waiting_on`) and each retry delay (`cat: retry_delay`) a slice;
/// - a `groups and joins` thread: group completions, join completions and
///   tasks settled without running as instant events (`ph: i`);
/// - flow arrows (`ph: s` → `ph: f`, `cat: needs`) from each need's end to the
///   start of the task that waited for it.
///
/// Times are microseconds since the run started.
extension RunTimeline {
    package static let eventsThread = 1
    package static let firstSlotThread = 10
    package var firstWaitThread: Int { Self.firstSlotThread + slotLanes + 10 }

    package var chromeTrace: String {
        var events: [[UInt8]] = []
        events.reserveCapacity(attempts.count * 2 + waits.count + instants.count + 16)
        let process = "flowrun " + (workflow.isEmpty ? "run" : workflow) + (runID.isEmpty ? "" : " " + runID)
        events.append(metadata("process_name", thread: nil, name: process))
        events.append(metadata("thread_name", thread: Self.eventsThread, name: "groups and joins"))
        events.append(sortIndex(thread: Self.eventsThread, 0))
        for lane in 0..<slotLanes {
            events.append(metadata("thread_name", thread: Self.firstSlotThread + lane, name: "slot \(lane + 1)"))
            events.append(sortIndex(thread: Self.firstSlotThread + lane, 1 + lane))
        }
        for lane in 0..<waitLanes {
            events.append(metadata("thread_name", thread: firstWaitThread + lane, name: "waiting \(lane + 1)"))
            events.append(sortIndex(thread: firstWaitThread + lane, 1 + slotLanes + lane))
        }

        for attempt in attempts {
            var args = JSONObjectWriter()
            args.add("status", attempt.status)
            args.add("attempt", attempt.attempt)
            args.add("exit_code", attempt.exitCode)
            args.add("signal", attempt.signal)
            args.add("reason", attempt.reason)
            args.add("peak_memory_bytes", attempt.peakMemoryBytes.map(Int.init))
            args.add("cpu_seconds", attempt.cpuSeconds)
            args.add("group", attempt.group)
            if !attempt.semaphores.isEmpty { args.add("semaphores", attempt.semaphores) }
            if let needs = needs[attempt.task], attempt.attempt == 1 { args.add("needs", needs) }
            events.append(slice(attempt.task, category: "task", start: attempt.start, end: attempt.end,
                                thread: Self.firstSlotThread + attempt.lane, args: args))
        }
        for wait in waits {
            var args = JSONObjectWriter()
            args.add("task", wait.task)
            if !wait.waitingOn.isEmpty { args.add("waiting_on", wait.waitingOn) }
            let name = (wait.kind == .slots ? "waiting: " : "retry delay: ") + wait.task
            events.append(slice(name, category: wait.kind.rawValue, start: wait.start, end: wait.end,
                                thread: firstWaitThread + wait.lane, args: args))
        }
        for instant in instants {
            var json = JSONObjectWriter()
            let kind = instant.kind == .notRun ? "task" : instant.kind.rawValue
            json.add(key: "name", "\(kind) \(instant.name) \(instant.status)")
            json.add("cat", instant.kind.rawValue)
            json.add("ph", "i")
            json.add("s", "t")
            json.add("ts", Self.microseconds(instant.time))
            json.add("pid", 1)
            json.add("tid", Self.eventsThread)
            var args = JSONObjectWriter()
            args.add(key: kind, instant.name)
            args.add("status", instant.status)
            args.add("detail", instant.detail)
            json.addRaw("args", String(decoding: args.finish(), as: UTF8.self))
            events.append(json.finish())
        }
        appendFlows(to: &events)

        var text = "{\"displayTimeUnit\":\"ms\",\"otherData\":"
        var other = JSONObjectWriter()
        other.add("run_id", runID)
        other.add("workflow", workflow)
        other.add("finished", isFinished)
        text += String(decoding: other.finish(), as: UTF8.self)
        text += ",\"traceEvents\":[\n"
        for (index, event) in events.enumerated() {
            if index > 0 { text += ",\n" }
            text += String(decoding: event, as: UTF8.self)
        }
        return text + "\n]}\n"
    }

    /// One arrow per need of each task that ran: from the need's last
    /// attempt's end (a group or join: its completion) to the task's first start.
    private func appendFlows(to events: inout [[UInt8]]) {
        var lastAttempt: [String: Attempt] = [:]
        var firstAttempt: [String: Attempt] = [:]
        for attempt in attempts {
            if (lastAttempt[attempt.task]?.attempt ?? 0) < attempt.attempt { lastAttempt[attempt.task] = attempt }
            if firstAttempt[attempt.task] == nil || attempt.attempt == 1 { firstAttempt[attempt.task] = attempt }
        }
        var completions: [String: Double] = [:]
        for instant in instants where instant.kind != .notRun { completions[instant.name] = instant.time }

        var flow = 0
        for task in needs.keys.sorted() {
            guard let dependent = firstAttempt[task] else { continue }
            for need in needs[task] ?? [] {
                let source: (time: Double, thread: Int)
                if let ran = lastAttempt[need] {
                    // Inside the need's slice, so the arrow binds to it.
                    source = (max(ran.start, ran.end - 0.000_000_5), Self.firstSlotThread + ran.lane)
                } else if let time = completions[need] {
                    source = (time, Self.eventsThread)
                } else {
                    continue
                }
                flow += 1
                events.append(flowEvent("s", id: flow, time: source.time, thread: source.thread))
                events.append(flowEvent("f", id: flow, time: dependent.start, thread: Self.firstSlotThread + dependent.lane))
            }
        }
    }

    private func flowEvent(_ phase: String, id: Int, time: Double, thread: Int) -> [UInt8] {
        var json = JSONObjectWriter()
        json.add("name", "needs")
        json.add("cat", "needs")
        json.add("ph", phase)
        json.add("id", id)
        json.add("ts", Self.microseconds(time))
        json.add("pid", 1)
        json.add("tid", thread)
        if phase == "f" { json.add("bp", "e") }
        return json.finish()
    }

    private func slice(_ name: String, category: String, start: Double, end: Double, thread: Int, args: consuming JSONObjectWriter) -> [UInt8] {
        var json = JSONObjectWriter()
        json.add(key: "name", name)
        json.add("cat", category)
        json.add("ph", "X")
        json.add("ts", Self.microseconds(start))
        json.add("dur", Self.microseconds(max(0, end - start)))
        json.add("pid", 1)
        json.add("tid", thread)
        json.addRaw("args", String(decoding: args.finish(), as: UTF8.self))
        return json.finish()
    }

    private func metadata(_ kind: String, thread: Int?, name: String) -> [UInt8] {
        var json = JSONObjectWriter()
        json.add("name", kind)
        json.add("ph", "M")
        json.add("pid", 1)
        json.add("tid", thread)
        var args = JSONObjectWriter()
        args.add(key: "name", name)
        json.addRaw("args", String(decoding: args.finish(), as: UTF8.self))
        return json.finish()
    }

    private func sortIndex(thread: Int, _ index: Int) -> [UInt8] {
        var json = JSONObjectWriter()
        json.add("name", "thread_sort_index")
        json.add("ph", "M")
        json.add("pid", 1)
        json.add("tid", thread)
        var args = JSONObjectWriter()
        args.add("sort_index", index)
        json.addRaw("args", String(decoding: args.finish(), as: UTF8.self))
        return json.finish()
    }

    /// Seconds → microseconds, to a tenth: JSONText keeps three decimals.
    private static func microseconds(_ seconds: Double) -> Double {
        (seconds * 1_000_000 * 10).rounded() / 10
    }
}
