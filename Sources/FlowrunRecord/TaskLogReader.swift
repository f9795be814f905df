#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues

/// `flowrun logs`: one task's log out of a run record, and with `-f` what
/// it adds while the run goes on.
///
/// The log is its entries in `logs/small.pack` (attempts that printed
/// little and ended within a moment), then its own file (`RecordedLog`).
///
/// Following waits on inotify (the run folder, for `events.jsonl` growing
/// and `summary.json` appearing, `logs/` and the log's shard `logs/000/`,
/// for the log being made and written), not a timer: output shows as soon as the task prints it. A
/// one-second timeout on that wait only notices a run whose flowrun was
/// killed (its lock gone, no summary, no more events): nothing else in the
/// loop polls. It ends when the task's `task_finished` event is in, or the
/// run is over, after one last read of the log.
package final class TaskLogReader {
    private let history: RunHistory
    private let runID: String
    private let task: String
    /// What the log's bytes are handed to, in order.
    private let output: ([UInt8]) -> Void
    private var log: Int32 = -1
    private var logFile: String?
    private var logOffset: off_t = 0
    /// How far `logs/small.index` was read, and whether the pack held some of the log.
    private var packIndexOffset = 0
    private var copiedPacked = false
    private var eventsOffset = 0
    private var pendingEvents: [UInt8] = []
    private(set) package var taskStarted = false
    private(set) package var taskFinished = false
    private(set) package var runEnded = false
    /// Why the log is there but cannot be read (a link planted in its place), if so.
    private(set) package var openProblem: String?

    package init(history: RunHistory, runID: String, task: String, logFile: String?, output: @escaping ([UInt8]) -> Void) {
        self.history = history
        self.runID = runID
        self.task = task
        self.logFile = logFile
        self.output = output
    }

    deinit { if log >= 0 { close(log) } }

    /// Copies the whole log as it is now. False when there is no log (the task printed nothing yet).
    @discardableResult
    package func copyLog() -> Bool {
        if log < 0, let logFile {
            // Attempts that ended small and quick are in the pack, before any file the task has.
            let packed = history.packedLog(runID, file: logFile, from: packIndexOffset)
            packIndexOffset = packed.indexEnd
            if !packed.bytes.isEmpty {
                copiedPacked = true
                output(packed.bytes)
            }
            log = history.openLog(runID, file: logFile)
            let reason = errno
            // Not there yet is normal (a log is made at its first byte); anything else is not.
            let shown = "logs/" + (RecordFileName.shard(ofFile: logFile).map { $0 + "/" } ?? "") + logFile
            openProblem = log < 0 && reason != ENOENT
                ? "cannot read \(history.folderPath(runID))/\(shown): \(reason == ELOOP || reason == EINVAL ? "not a plain file of the record (a link?)" : String(cString: strerror(reason)))"
                : nil
        }
        guard log >= 0 else { return copiedPacked }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(log, $0.baseAddress, $0.count, logOffset) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            logOffset += off_t(count)
            output(Array(buffer[..<count]))
        }
        return true
    }

    /// Copies the log, then what the task adds, until the task or the run ends.
    package func follow() {
        let watcher = FolderWatcher()
        let runFolder = history.openFolder(runID)
        if runFolder >= 0 { watcher.watch("/proc/self/fd/\(runFolder)", fallback: history.folderPath(runID)) }
        defer { if runFolder >= 0 { close(runFolder) } }
        // `logs/` is made at the run's first log (seen through the watch on the run folder).
        var watchesLogs = false
        var watchedShard: String?
        while true {
            if runFolder >= 0, !watchesLogs {
                let logs = openat(runFolder, "logs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if logs >= 0 {
                    watcher.watch("/proc/self/fd/\(logs)", fallback: history.folderPath(runID) + "/logs")
                    close(logs)
                    watchesLogs = true
                }
            }
            readNewEvents(runFolder)
            if runFolder >= 0, let shard = logFile.flatMap(RecordFileName.shard(ofFile:)), watchedShard != shard {
                // Not there until the shard's first log is made (seen through the watch on `logs/`).
                let logs = history.openFolder(runID, "logs")
                let folder = logs >= 0 ? openat(logs, shard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1
                if logs >= 0 { close(logs) }
                if folder >= 0 {
                    watcher.watch("/proc/self/fd/\(folder)", fallback: history.folderPath(runID) + "/logs/" + shard)
                    close(folder)
                    watchedShard = shard
                }
            }
            copyLog()
            if taskFinished || runEnded || runFolder < 0 { break }
            // Over without a run_finished event: flowrun was killed, or wrote its summary only.
            if !history.isLive(runID) {
                runEnded = true
                continue
            }
            watcher.wait(milliseconds: 1000)
        }
        // What the task printed between the last read and its end.
        copyLog()
    }

    /// Reads `events.jsonl` past what was read, whole lines only: the task's
    /// start (its log's name) and end, and the run's end.
    private func readNewEvents(_ runFolder: Int32) {
        guard runFolder >= 0 else { return }
        var summary = stat()
        if fstatat(runFolder, "summary.json", &summary, AT_SYMLINK_NOFOLLOW) == 0 { runEnded = true }
        let events = openat(runFolder, "events.jsonl", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard events >= 0 else { return }
        defer { close(events) }
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(events, $0.baseAddress, $0.count, off_t(eventsOffset)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            eventsOffset += count
            pendingEvents += buffer[..<count]
        }
        guard let lastBreak = pendingEvents.lastIndex(of: UInt8(ascii: "\n")) else { return }
        let quotedTask = JSONText.quoted(task)
        var start = 0
        while start <= lastBreak {
            let end = pendingEvents[start...].firstIndex(of: UInt8(ascii: "\n"))!
            let line = String(decoding: pendingEvents[start..<end], as: UTF8.self)
            start = end + 1
            // Most lines are about other tasks: a cheap look before parsing.
            guard line.contains(quotedTask) || line.hasPrefix("{\"event\":\"run_finished\"") else { continue }
            guard let event = JSONValue.parse(line), let kind = event["event"]?.string else { continue }
            if kind == "run_finished" {
                runEnded = true
            } else if event["task"]?.string == task {
                // A short attempt has one line, its task_finished with `started`.
                if kind == "task_started" || kind == "task_finished" {
                    if kind == "task_started" || event["started"] != nil { taskStarted = true }
                    if kind == "task_finished" { taskFinished = true }
                    if let path = event["path"]?.string, let slash = path.lastIndex(of: "/") {
                        logFile = String(path[path.index(after: slash)...])
                    }
                }
            }
        }
        pendingEvents.removeFirst(lastBreak + 1)
    }
}

/// An inotify instance on a few folders: `wait` returns when something in
/// one of them was made, written or renamed into place, or at the timeout.
final class FolderWatcher {
    private let descriptor: Int32

    init() {
        descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    func watch(_ path: String, fallback: String) {
        guard descriptor >= 0 else { return }
        let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)
        if inotify_add_watch(descriptor, path, mask) < 0 { _ = inotify_add_watch(descriptor, fallback, mask | UInt32(IN_DONT_FOLLOW)) }
    }

    /// Waits until something changed (or `milliseconds` passed), then drains what inotify queued.
    func wait(milliseconds: Int32) {
        guard descriptor >= 0 else {
            usleep(UInt32(milliseconds) * 1000 / 4)  // no inotify: a modest poll
            return
        }
        var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        _ = poll(&request, 1, milliseconds)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }
}
