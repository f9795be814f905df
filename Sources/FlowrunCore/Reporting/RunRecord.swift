import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// The run's folder, `.flowrun/runs/RUN_ID/` (or `--log-dir`):
///
///     events.jsonl        one event a line, written as it happens (a step's lines in one write)
///     logs/TASK.log       everything the task printed (stdout and stderr), all attempts
///     outputs/TASK.N      the `$FLOWRUN_OUTPUT` file of attempt N
///     summary.json        the final state, written when the run ends
///
/// Written only from the engine's serial queue.
public final class RunRecord: RunReporter, @unchecked Sendable {
    // @unchecked: every method runs on the engine's serial queue.
    public let runID: String
    public let directory: String
    private var eventsDescriptor: Int32 = -1

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Creates the folder (and its parents). `baseDirectory` nil means
    /// `.flowrun/runs` under the current directory.
    public init(runID: String, baseDirectory: String?) throws(Failure) {
        self.runID = runID
        directory = (baseDirectory ?? ".flowrun/runs") + "/" + runID
        logsDirectory = directory + "/logs"
        outputsDirectory = directory + "/outputs"
        for path in [directory, logsDirectory, outputsDirectory] {
            try Self.makeDirectories(path)
        }
        eventsDescriptor = open(directory + "/events.jsonl", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        if eventsDescriptor < 0 { throw Failure(description: "cannot write \(directory)/events.jsonl: \(String(cString: strerror(errno)))") }
    }

    deinit {
        if eventsDescriptor >= 0 { close(eventsDescriptor) }
    }

    /// `20261122-025301-4f1c`: sortable, and unique enough for one machine.
    public static func makeRunID() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let random = String(UInt16.random(in: 0...UInt16.max), radix: 16)
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))-\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))-"
            + String(repeating: "0", count: 4 - random.count) + random
    }

    public func logPath(for task: String) -> String { Self.path(in: logsDirectory, Self.fileName(task), ".log") }

    /// The `$FLOWRUN_OUTPUT` file of a task's attempt: `outputs/TASK.N`.
    public func outputPath(for task: String, attempt: Int) -> String {
        Self.path(in: outputsDirectory, Self.fileName(task), "." + String(attempt))
    }

    /// Tells which attempts may have written their `$FLOWRUN_OUTPUT` file (nil: look for every one).
    func watchOutputFiles() -> OutputFilesWatch? {
        OutputFilesWatch(runDirectory: directory, outputsDirectory: outputsDirectory)
    }

    /// `logs/`, and `outputs/`, where tasks create their `$FLOWRUN_OUTPUT` files.
    private let logsDirectory: String
    private let outputsDirectory: String

    /// `DIRECTORY/NAMESUFFIX` in one string: a path or two is built per task.
    private static func path(in directory: String, _ name: String, _ suffix: String = "") -> String {
        var path = ""
        path.reserveCapacity(directory.utf8.count + 1 + name.utf8.count + suffix.utf8.count)
        path += directory
        path += "/"
        path += name
        path += suffix
        return path
    }

    /// Event lines not yet written. The engine's queue writes them once the
    /// step that produced them is over (`writesEvents(scheduling:)`), so a burst of
    /// events costs one write, and nothing waits longer than that step.
    private var pendingEvents: [UInt8] = []
    private var scheduleWrite: ((@escaping @Sendable () -> Void) -> Void)?
    /// `writePendingEvents` as a closure made once, not once per step. Weak:
    /// a write queued for later must not outlive the record (nor keep it).
    private lazy var writePendingEventsWork: @Sendable () -> Void = { [weak self] in self?.writePendingEvents() }

    /// Gathers the event lines of each engine step into one write:
    /// `schedule` runs its work once the current step is over. Without it,
    /// every event is written at once.
    func writesEvents(scheduling schedule: @escaping (@escaping @Sendable () -> Void) -> Void) {
        scheduleWrite = schedule
    }

    public func report(_ event: RunEvent) {
        guard let scheduleWrite else {
            writeAll(eventsDescriptor, event.jsonLine + "\n")
            return
        }
        let flushIsScheduled = !pendingEvents.isEmpty
        event.appendJSONLine(to: &pendingEvents)
        pendingEvents.append(UInt8(ascii: "\n"))
        if pendingEvents.count >= 64 * 1024 {
            writePendingEvents()
        } else if !flushIsScheduled {
            scheduleWrite(writePendingEventsWork)
        }
    }

    private func writePendingEvents() {
        guard !pendingEvents.isEmpty else { return }
        pendingEvents.withUnsafeBytes { _ = writeAll(eventsDescriptor, $0) }
        pendingEvents.removeAll(keepingCapacity: true)
    }

    public func finish() {
        writePendingEvents()
    }

    /// Writes `summary.json` piece by piece (a 100,000-task summary is never
    /// held whole), atomically: a temporary file renamed into place.
    func writeSummary(_ produce: (inout ChunkedFileWriter) -> Void) {
        let path = directory + "/summary.json"
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return }
        var writer = ChunkedFileWriter(descriptor: descriptor)
        produce(&writer)
        writer.flush()
        close(descriptor)
        rename(temporary, path)
    }

    /// A task name as a file name: `/` and other awkward bytes become `_`.
    static func fileName(_ name: String) -> String {
        if name.utf8.count <= 200, name.utf8.first != UInt8(ascii: "."), !name.isEmpty, name.utf8.allSatisfy(isFileNameByte) {
            return name  // the common case, checked without building a new string
        }
        var result = String(name.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && isFileNameByte(UInt8(scalar.value)) ? Character(scalar) : "_"
        })
        if result.hasPrefix(".") || result.isEmpty { result = "_" + result }
        return String(result.prefix(200))
    }

    /// ASCII letters, digits and `_.-[]=+,@`: what a task name keeps in its file name.
    private static func isFileNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "_.-[]=+,@".utf8.contains(byte)
        }
    }

    private static func makeDirectories(_ path: String) throws(Failure) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw Failure(description: "cannot create \(current): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// Writes every byte, retrying short writes and EINTR.
public func writeAll(_ descriptor: Int32, _ text: String) {
    var text = text
    text.withUTF8 { _ = writeAll(descriptor, UnsafeRawBufferPointer($0)) }
}

/// Writes every byte of a buffer, retrying short writes and EINTR. False
/// (with errno set) if a write failed.
@discardableResult
func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        offset += written
    }
    return true
}
