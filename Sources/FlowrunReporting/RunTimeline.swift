// FoundationEssentials, not Foundation: see Plan+JSON.swift.
import FoundationEssentials

/// A run as time spans, read back from its record's `events.jsonl` (a
/// finished run, or a live one up to its last event): each attempt of each
/// task on the slot lane it ran in, the waits for slots and semaphores and
/// the retry delays in between, what did not run, group and join
/// completions, and which need each task waited for. `chromeTrace` and `svg`
/// draw it.
package struct RunTimeline: Sendable {
    /// One attempt of one task, `start`..`end` seconds after the run started.
    package struct Attempt: Sendable {
        package var task: String
        package var attempt: Int
        package var start: Double
        package var end: Double
        /// `running` while a live run's attempt has not ended.
        package var status: String
        package var exitCode: Int?
        package var signal: Int?
        package var reason: String?
        package var group: String?
        package var semaphores: [String]
        /// What it used (a finished task's last attempt, SPEC §13).
        package var peakMemoryBytes: UInt64?
        package var cpuSeconds: Double?
        /// The slot lane (0-based), packed: the lowest lane free at `start`.
        package var lane = 0
    }

    /// Time a task spent ready but not started: waiting for slots
    /// (`waitingOn` names them) or backing off before a retry.
    package struct Wait: Sendable {
        package enum Kind: String, Sendable { case slots, retryDelay = "retry_delay" }
        package var task: String
        package var kind: Kind
        package var start: Double
        package var end: Double
        package var waitingOn: [String]
        package var lane = 0
    }

    /// A moment: a group finished, a join completed, a task settled without running.
    package struct Instant: Sendable {
        package enum Kind: String, Sendable { case group, join, notRun = "not_run" }
        package var kind: Kind
        package var name: String
        package var time: Double
        package var status: String
        package var detail: String?
    }

    package var runID: String
    package var workflow: String
    package var attempts: [Attempt] = []
    package var waits: [Wait] = []
    package var instants: [Instant] = []
    /// Task → what it waited for (tasks, groups or joins), from its first start.
    package var needs: [String: [String]] = [:]
    /// When the run finished, or its last event (a live run).
    package var end: Double = 0
    package var isFinished = false
    /// Lanes used by attempts and by waits.
    package var slotLanes = 0
    package var waitLanes = 0

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Reads `FOLDER/events.jsonl`.
    package init(runFolder folder: String) throws(Failure) {
        let path = folder + "/events.jsonl"
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw Failure(description: "cannot read \(path): no run record there")
        }
        try self.init(eventsJSONL: [UInt8](data), source: path)
    }

    package init(eventsJSONL data: [UInt8], source: String = "events.jsonl") throws(Failure) {
        runID = ""
        workflow = ""
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        var builder = Builder()
        var lineNumber = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            lineNumber += 1
            guard let event = try? decoder.decode(RecordedEvent.self, from: Data(line)) else {
                // A live run's last line may be cut; anything earlier is a broken record.
                if lineNumber > 1 && line.last != UInt8(ascii: "}") { break }
                throw Failure(description: "\(source):\(lineNumber): not an event line")
            }
            builder.add(event, to: &self)
        }
        guard lineNumber > 0 else { throw Failure(description: "\(source) holds no events") }
        builder.finish(&self)
        packLanes()
    }

    /// Greedy interval partitioning: each span, in order of start, takes the
    /// lowest lane whose last span ended by then. Lanes never overlap and
    /// number at most the largest count of spans alive at once.
    private mutating func packLanes() {
        attempts.sort { ($0.start, $0.task, $0.attempt) < ($1.start, $1.task, $1.attempt) }
        slotLanes = Self.pack(&attempts, start: \.start, end: \.end, lane: \.lane)
        waits.sort { ($0.start, $0.task) < ($1.start, $1.task) }
        waitLanes = Self.pack(&waits, start: \.start, end: \.end, lane: \.lane)
        instants.sort { ($0.time, $0.name) < ($1.time, $1.name) }
    }

    private static func pack<Span>(_ spans: inout [Span], start: KeyPath<Span, Double>, end: KeyPath<Span, Double>,
                                   lane: WritableKeyPath<Span, Int>) -> Int {
        var laneEnds: [Double] = []
        for index in spans.indices {
            let begins = spans[index][keyPath: start]
            if let free = laneEnds.firstIndex(where: { $0 <= begins }) {
                spans[index][keyPath: lane] = free
                laneEnds[free] = spans[index][keyPath: end]
            } else {
                spans[index][keyPath: lane] = laneEnds.count
                laneEnds.append(spans[index][keyPath: end])
            }
        }
        return laneEnds.count
    }

    /// Turns the event stream into spans: an attempt opens at `task_started`
    /// and closes at the task's next `task_retrying` or `task_finished`.
    private struct Builder {
        var open: [String: Attempt] = [:]
        var waitingSince: [String: (time: Double, kind: Wait.Kind, on: [String])] = [:]
        /// Tasks that had an attempt: one cancelled during a retry delay did run.
        var ran: Set<String> = []
        var maxParallel: Int?

        mutating func add(_ event: RecordedEvent, to timeline: inout RunTimeline) {
            timeline.end = max(timeline.end, event.elapsed)
            switch event.event {
            case "run_started":
                maxParallel = event.maxParallel
                timeline.runID = event.runId ?? ""
                timeline.workflow = event.workflow ?? ""
            case "task_waiting":
                guard let task = event.task else { return }
                // A service that exited before it was ready, waiting for its port: that try ends here.
                close(task, at: event.elapsed, event, into: &timeline)
                // Slots full when a retry delay ends: the delay is over, the wait for slots begins.
                if let delay = waitingSince[task] {
                    timeline.waits.append(Wait(task: task, kind: delay.kind, start: delay.time, end: event.elapsed, waitingOn: delay.on))
                }
                // No waiting_on: the run's max_parallel slots are all taken (docs/events-json.md).
                waitingSince[task] = (event.elapsed, .slots, event.waitingOn ?? maxParallel.map { ["max_parallel \($0)/\($0)"] } ?? [])
            case "task_started":
                guard let task = event.task else { return }
                if let wait = waitingSince.removeValue(forKey: task) {
                    timeline.waits.append(Wait(task: task, kind: wait.kind, start: wait.time, end: event.elapsed, waitingOn: wait.on))
                }
                if let needs = event.needs { timeline.needs[task] = needs }
                ran.insert(task)
                open[task] = Attempt(
                    task: task, attempt: event.attempt ?? 1, start: event.elapsed, end: event.elapsed, status: "running",
                    group: event.limits?.group?.name, semaphores: event.limits?.semaphores?.map(\.name) ?? [])
            case "task_retrying":
                guard let task = event.task else { return }
                close(task, at: event.elapsed, event, into: &timeline)
                waitingSince[task] = (event.elapsed, .retryDelay, [])
            case "task_finished":
                guard let task = event.task else { return }
                if let started = event.started {
                    // One line for a short attempt: it opened at `started`.
                    var start = event
                    start.elapsed = started
                    add(RecordedEvent(startOf: start), to: &timeline)
                }
                if open[task] != nil {
                    close(task, at: event.elapsed, event, into: &timeline)
                } else {
                    // Settled between attempts (cancelled in a retry delay), or
                    // without one: skipped, or cancelled while pending or waiting.
                    if let wait = waitingSince.removeValue(forKey: task) {
                        timeline.waits.append(Wait(task: task, kind: wait.kind, start: wait.time, end: event.elapsed, waitingOn: wait.on))
                    }
                    guard !ran.contains(task) else { return }
                    timeline.instants.append(Instant(kind: .notRun, name: task, time: event.elapsed, status: event.status ?? "skipped", detail: event.reason))
                }
            case "group_finished":
                timeline.instants.append(Instant(
                    kind: .group, name: event.group ?? "", time: event.elapsed, status: event.status ?? "",
                    detail: event.members.map { "\(event.succeeded ?? 0)/\($0) succeeded" }))
            case "join_completed":
                var detail = event.required.map { "\(event.succeeded ?? 0)/\($0) needed" }
                if event.timedOut == true { detail = (detail.map { $0 + ", " } ?? "") + "timed out" }
                timeline.instants.append(Instant(kind: .join, name: event.join ?? "", time: event.elapsed, status: event.status ?? "", detail: detail))
            case "run_finished":
                timeline.isFinished = true
            default:
                break
            }
        }

        private mutating func close(_ task: String, at time: Double, _ event: RecordedEvent, into timeline: inout RunTimeline) {
            guard var attempt = open.removeValue(forKey: task) else { return }
            attempt.end = time
            // A task_finished says its status when it is not a success.
            attempt.status = event.status ?? (event.event == "task_finished" ? "succeeded" : "failed")
            // A success's exit code goes without saying: 0 (docs/events-json.md).
            attempt.exitCode = event.exitCode ?? (event.event == "task_finished" && event.status == nil ? 0 : nil)
            attempt.signal = event.signal
            attempt.reason = event.reason
            attempt.peakMemoryBytes = event.peakMemoryBytes
            attempt.cpuSeconds = event.cpuSeconds
            timeline.attempts.append(attempt)
        }

        /// A live run: what is still running or waiting ends at the last event.
        mutating func finish(_ timeline: inout RunTimeline) {
            for (_, var attempt) in open {
                attempt.end = timeline.end
                timeline.attempts.append(attempt)
            }
            for (task, wait) in waitingSince {
                timeline.waits.append(Wait(task: task, kind: wait.kind, start: wait.time, end: timeline.end, waitingOn: wait.on))
            }
            open = [:]
            waitingSince = [:]
        }
    }

    /// The keys of an `events.jsonl` line the timeline reads (docs/events-json.md).
    private struct RecordedEvent: Decodable {
        struct Limits: Decodable {
            struct Group: Decodable { var name: String }
            struct Semaphore: Decodable { var name: String }
            var group: Group?
            var semaphores: [Semaphore]?
        }

        var event: String
        var elapsed: Double
        var started: Double?
        var maxParallel: Int?
        var runId: String?
        var workflow: String?
        var task: String?
        var group: String?
        var join: String?
        var status: String?
        var attempt: Int?
        var exitCode: Int?
        var signal: Int?
        var reason: String?
        var waitingOn: [String]?
        var limits: Limits?
        var needs: [String]?
        var members: Int?
        var succeeded: Int?
        var required: Int?
        var timedOut: Bool?
        var peakMemoryBytes: UInt64?
        var cpuSeconds: Double?

        /// The `task_started` a short attempt's `task_finished` stands for too.
        init(startOf finished: RecordedEvent) {
            self = finished
            event = "task_started"
            started = nil
            status = nil
            exitCode = nil
            signal = nil
            reason = nil
            peakMemoryBytes = nil
            cpuSeconds = nil
        }
    }
}
