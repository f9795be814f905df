import Dispatch
#if canImport(Glibc)
import Glibc
import FlowrunValues
#endif
package import FlowrunEvents

/// The run's folder, `.flowrun/runs/RUN_ID/` (or `--log-dir`), private and
/// never written through a link (`RunFolder`):
///
///     events.jsonl              one event a line, written as it happens (a step's lines in one write)
///     logs/000/000042-NAME.log  everything task 42 printed (stdout and stderr), all attempts;
///                               none if it printed nothing, or little in a moment:
///     logs/small.pack           small logs of short attempts, one after another,
///     logs/small.index          and where each is (`SmallLogPack`, read by `RecordedLog`)
///     outputs/000042-NAME.N     the `$FLOWRUN_OUTPUT` file of its attempt N (if it wrote one)
///
/// `logs/` is made at the first log, `outputs/` at the first task's start:
/// the record of a run where every task was up to date is `events.jsonl`
/// and `summary.json` alone.
///
/// `000` is the log's shard (`RecordFileName.shard`: tasks 0–999, then
/// `001`, …), so that no folder holds more than a thousand tasks' logs.
/// `outputs/` is not sharded: a task writes at most one file there an attempt.
///     summary.json              the final state, written when the run ends
///
/// Files are named by the task's node index (`RecordFileName`): two tasks
/// never share one. A file that cannot be written fails the run (exit 1,
/// `failure` says which and why); `events.jsonl` keeps whole lines only and
/// `summary.json` is whole or absent.
///
/// Written only from the engine's serial queue (logs: see `TaskLog`).
package final class RunRecord: RunReporter, @unchecked Sendable {
    // @unchecked: every method runs on the engine's serial queue.
    package let runID: String
    /// When the run started: the instant its id names, the engine's `elapsed` 0.
    package var start: RunStart { folder.start }
    /// The folder as the user named it: `BASE/RUN_ID`.
    package let directory: String
    package let folder: RunFolder
    private let eventsDescriptor: Int32
    /// Where event lines go: written inline, or (once the engine schedules
    /// writes, `writesEvents(scheduling:)`) encoded on a queue of their own.
    private var eventsFile: EventsFile

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Makes a fresh run folder in `baseDirectory` (nil: `.flowrun/runs`
    /// under the current directory), with a new id if one is taken.
    /// `makeRunID` names a run starting at the instant it is given.
    package init(baseDirectory: String?, makeRunID: (RunStart) -> String = RunRecord.makeRunID(startingAt:)) throws(Failure) {
        do throws(RunFolder.Refusal) {
            folder = try RunFolder(base: baseDirectory, makeRunID: makeRunID)
        } catch {
            throw Failure(description: error.description)
        }
        runID = folder.runID
        directory = folder.path
        eventsDescriptor = folder.create("events.jsonl", in: folder.descriptor, appending: true)
        if eventsDescriptor < 0 { throw Failure(description: "cannot write \(directory)/events.jsonl: \(String(cString: strerror(errno)))") }
        eventsFile = EventsFile(descriptor: eventsDescriptor, folder: folder, directory: directory, inBackground: false)
    }

    /// `events.jsonl` opened again, for reading and appending, for the
    /// supervisor: if the engine is killed, it appends the run's end there
    /// (`Supervisor.keepEvents`). -1 with errno set; the caller closes it.
    package func eventsForTheSupervisor() -> Int32 {
        openat(folder.descriptor, "events.jsonl", O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
    }

    deinit {
        eventsFile.wait()
        if eventsDescriptor >= 0 { close(eventsDescriptor) }
    }

    /// `20261122-025301.482915-4f1c09a2b7d3`: the local date and time the
    /// run started, to the microsecond (one `CLOCK_REALTIME` reading,
    /// `RunStart`), and 48 random bits from the system's generator
    /// (getrandom), so no one can guess the next one. Runs sort by name in
    /// the order they started, within one second too, so ordering them
    /// opens no record (`RunHistory.chronological`).
    package static func makeRunID(startingAt start: RunStart) -> String {
        var now = time_t(start.seconds)
        var parts = tm()
        localtime_r(&now, &parts)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(RunHistory.runIDLength)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        digits(Int(parts.tm_mon) + 1, 2)
        digits(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_hour), 2)
        digits(Int(parts.tm_min), 2)
        digits(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "."))
        digits(start.microseconds, 6)
        bytes.append(UInt8(ascii: "-"))
        var generator = SystemRandomNumberGenerator()
        let random = generator.next() as UInt64
        for shift in stride(from: 44, through: 0, by: -4) {
            let nibble = UInt8(truncatingIfNeeded: random >> UInt64(shift)) & 0xF
            bytes.append(nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A run id for a run starting now.
    package static func makeRunID() -> String {
        makeRunID(startingAt: .now())
    }

    /// The first record file that could not be written ("cannot write PATH: REASON").
    package var failure: String? { folder.failure }

    // MARK: Task files

    /// `000042-NAME`: what task `index`'s files are named (summary.json's `record_name`).
    package func recordName(index: Int, name: String) -> String {
        RecordFileName.stem(index: index, name: name)
    }

    /// Task `index`'s log as the user finds it: `DIR/logs/000/000042-NAME.log`.
    package func logPath(index: Int, name: String) -> String {
        String(joining: directory, "/logs/", RecordFileName.shard(index: index), "/", RecordFileName.stem(index: index, name: name), ".log")
    }

    /// Task `index`'s log, to write: made at its first byte, or reopened
    /// when an earlier attempt made it (`exists`).
    package func log(index: Int, name: String, exists: Bool) -> TaskLog {
        let stem = RecordFileName.stem(index: index, name: name)
        let shard = RecordFileName.shard(index: index)
        // Small logs are packed where starts are held back: the start's line
        // being written is when the log goes to its own file (`spill`).
        let packs = scheduleLater != nil
        let log = TaskLog(folder: folder, shard: shard, stem: stem, task: name, path: String(joining: directory, "/logs/", shard, "/", stem, ".log"), exists: exists,
                          pack: packs ? smallLogs : nil)
        if packs {
            logsInMemory[name] = log
            madePackableLogs = true
        }
        return log
    }

    /// Task `index`'s log through flowrun's handle on the run folder
    /// (`/proc/PID/fd/N/logs/…`, which tasks can open too): what the files
    /// flowrun makes beside a log (a long stdout, a long script) are named
    /// after, so that a swapped run folder never redirects them. Makes the
    /// log's shard, for those files.
    package func logPathForFiles(index: Int, name: String) -> String {
        let shard = RecordFileName.shard(index: index)
        _ = folder.inLogsShard(shard, make: true) { $0 }
        return String(joining: logsForTasks, shard, "/", RecordFileName.stem(index: index, name: name), ".log")
    }

    private lazy var logsForTasks: String = folder.pathForTasks() + "/logs/"

    /// The last lines of task `index`'s log.
    package func logTail(index: Int, name: String, lines: Int) -> [String] {
        var tail: [String] = []
        let packed = scheduleLater != nil ? smallLogs.packed(task: name) : []
        _ = folder.inLogsShard(RecordFileName.shard(index: index), make: false) { shard in
            tail = RecordedLog.tail(packed: packed, shard: shard, fileName: RecordFileName.stem(index: index, name: name) + ".log", lines: lines)
            return 0
        }
        return tail
    }

    /// `outputs/000042-NAME.N`: the file name of attempt N's `$FLOWRUN_OUTPUT`.
    package func outputFileName(index: Int, name: String, attempt: Int) -> String {
        String(joining: RecordFileName.stem(index: index, name: name), ".", String(attempt))
    }

    /// `$FLOWRUN_OUTPUT` as the task gets it: through flowrun's handle on the run folder.
    package func outputPathForTask(_ fileName: String) -> String {
        String(joining: outputsForTasks, fileName)
    }

    /// `…/outputs/`, named when the first task starts: in the process that
    /// holds the folder and starts tasks, whatever forked before. The folder
    /// is made then too (a run that starts none has none); if it cannot
    /// be, the record says so and the run fails.
    private lazy var outputsForTasks: String = {
        if let problem = folder.makeOutputsFolder() { folder.noteFailure(problem) }
        return folder.pathForTasks() + "/outputs/"
    }()

    // MARK: Events

    /// Events not yet written. The engine's queue hands them to
    /// `eventsFile` once the step that produced them is over
    /// (`writesEvents(scheduling:)`), so a burst of events costs one write,
    /// and nothing waits longer than that step (and its encoding).
    var pendingEvents: [RunEvent] = []
    /// Starts held back for a moment (`RunRecord+HeldStarts`), and how to come back to them.
    var held = HeldStarts()
    var scheduleLater: ((Double, @escaping @Sendable () -> Void) -> Void)?
    /// Small logs of short attempts (`SmallLogPack`).
    private lazy var smallLogs = SmallLogPack(folder: folder)
    /// The logs of attempts whose start is held back, by task: kept in
    /// memory until the start is written (`spill`) or the attempt ends.
    var logsInMemory: [String: TaskLog] = [:]
    /// Whether any task's log may have gone to the pack (none in a run of `sleep:` tasks).
    private var madePackableLogs = false
    private var scheduleWrite: ((@escaping @Sendable () -> Void) -> Void)?
    /// `writePendingEvents` as a closure made once, not once per step. Weak:
    /// a write queued for later must not outlive the record (nor keep it).
    private lazy var writePendingEventsWork: @Sendable () -> Void = { [weak self] in self?.writePendingEvents() }

    /// Gathers the event lines of each engine step into one write:
    /// `schedule` runs its work once the current step is over. Without it,
    /// every event is written at once.
    package func writesEvents(scheduling schedule: @escaping (@escaping @Sendable () -> Void) -> Void) {
        scheduleWrite = schedule
        eventsFile.wait()
        eventsFile = EventsFile(descriptor: eventsDescriptor, folder: folder, directory: directory, inBackground: true)
    }

    package func report(_ event: RunEvent) {
        let flushIsScheduled = !pendingEvents.isEmpty
        if holdsStart(event) { return }
        if event.kind == .taskFinished, madePackableLogs, let task = event.subject { smallLogs.settled(task: task) }
        if event.kind != .groupFinished, event.kind != .joinCompleted, let task = event.subject, let start = releaseHeldStart(of: task) {
            if event.kind == .taskFinished {
                if !logsInMemory.isEmpty { logsInMemory[task] = nil }
                append(start.mergedInto(event))
            } else {
                append(start, spilling: true)
                append(event)
            }
        } else {
            append(event)
        }
        guard let scheduleWrite else {
            writePendingEvents()
            return
        }
        if pendingEvents.count >= 1024 {
            writePendingEvents()
        } else if !flushIsScheduled {
            scheduleWrite(writePendingEventsWork)
        }
    }

    /// Hands the pending events to `eventsFile` (see there for a write that fails).
    package func writePendingEvents() {
        writeDueStarts()
        guard !pendingEvents.isEmpty else { return }
        let batch = pendingEvents
        pendingEvents = []
        eventsFile.write(batch)
    }

    /// Every event so far in `events.jsonl` (or the failure noted): before
    /// the summary, which says whether the file is whole.
    package func writeEventsNow() {
        writePendingEvents()
        eventsFile.wait()
    }

    package func finish() {
        writeDueStarts(all: true)
        writeEventsNow()
    }

    /// With `spilling`, a held start being written: its attempt's log
    /// goes to its own file from now on.
    func append(_ event: RunEvent, spilling: Bool = false) {
        pendingEvents.append(event)
        if spilling, !logsInMemory.isEmpty, let task = event.subject { logsInMemory.removeValue(forKey: task)?.spill() }
    }

    // MARK: Summary

    /// Writes `summary.json` piece by piece (a 100,000-task summary is never
    /// held whole), atomically: an exclusive temporary file renamed into
    /// place. If it cannot be written whole, there is none, and the run fails.
    package func writeSummary(_ produce: (inout ChunkedFileWriter) -> Void) {
        let temporary = "summary.json.tmp"
        var descriptor = folder.create(temporary, in: folder.descriptor)
        if descriptor < 0 && errno == EEXIST {
            // Left by someone in our own folder: remove the name (not what it points at) and make ours.
            unlinkat(folder.descriptor, temporary, 0)
            descriptor = folder.create(temporary, in: folder.descriptor)
        }
        guard descriptor >= 0 else {
            folder.noteFailure("cannot write \(directory)/summary.json: \(String(cString: strerror(errno)))")
            return
        }
        var writer = ChunkedFileWriter(descriptor: descriptor)
        produce(&writer)
        writer.flush()
        close(descriptor)
        var reason = writer.failure
        if reason == nil, renameat(folder.descriptor, temporary, folder.descriptor, "summary.json") != 0 { reason = errno }
        if let reason {
            unlinkat(folder.descriptor, temporary, 0)
            folder.noteFailure("cannot write \(directory)/summary.json: \(String(cString: strerror(reason)))")
        }
    }
}

/// Writes every byte, retrying short writes and EINTR. False (with errno
/// set) if a write failed: each caller says what that means for it.
package func writeAll(_ descriptor: Int32, _ text: String) -> Bool {
    var text = text
    return text.withUTF8 { writeAll(descriptor, UnsafeRawBufferPointer($0)) }
}

/// Writes every byte of a buffer, retrying short writes and EINTR. False
/// (with errno set) if a write failed.
package func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        // Nothing taken and no error: retrying would spin for ever.
        if written == 0 {
            errno = EIO
            return false
        }
        offset += written
    }
    return true
}
