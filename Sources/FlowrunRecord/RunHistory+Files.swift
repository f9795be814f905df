#if canImport(Glibc)
import Glibc
#endif
package import FlowrunEvents
import FlowrunValues

/// Files inside one run's folder, opened relative to the held history
/// folder and never through a link.
extension RunHistory {
    /// Opens run `id`'s folder `sub` (`""` for the run folder itself); -1
    /// with errno set if it is not there, or is not the record owner's.
    func openFolder(_ id: String, _ sub: String = "") -> Int32 {
        let run = openat(descriptor, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard run >= 0 else { return run }
        var info = stat()
        guard fstat(run, &info) == 0, info.st_uid == owner else {
            close(run)
            errno = EPERM
            return -1
        }
        guard !sub.isEmpty else { return run }
        defer { close(run) }
        return openat(run, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    }

    /// The last `lines` lines of the log `file` (a name in `logs/SHARD/`) of run `id`.
    package func logTail(_ id: String, file: String, lines: Int) -> [String] {
        let logs = openFolder(id, "logs")
        guard logs >= 0 else { return [] }
        defer { close(logs) }
        let shard = openLogsFolder(id, file: file)
        defer { if shard >= 0 { close(shard) } }
        return RecordedLog(logs: logs, shard: shard, fileName: file).tail(lines: lines)
    }

    /// The bytes of run `id`'s log `file` that `logs/small.pack` holds,
    /// from the pack's index's byte `from` on, and where to read on from.
    package func packedLog(_ id: String, file: String, from: Int) -> (bytes: [UInt8], indexEnd: Int) {
        let logs = openFolder(id, "logs")
        guard logs >= 0 else { return ([], from) }
        defer { close(logs) }
        let log = RecordedLog(logs: logs, shard: -1, fileName: file)
        let (entries, end) = log.packedEntries(from: from)
        return (log.packedBytes(entries), end)
    }

    /// The folder of run `id` that holds the log `file`: its shard
    /// (`logs/000/` for `000042-NAME.log`), or `logs/` itself in a record
    /// made before logs were sharded. -1 with errno set when there is none.
    func openLogsFolder(_ id: String, file: String) -> Int32 {
        let logs = openFolder(id, "logs")
        guard logs >= 0, let shard = RecordFileName.shard(ofFile: file) else { return logs }
        let folder = openat(logs, shard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        // No shard: an older record's flat `logs/`, or a log not made yet (not there either).
        if folder < 0 && errno == ENOENT { return logs }
        let reason = errno
        close(logs)
        errno = reason
        return folder
    }

    /// Opens the log `file` of run `id` for reading: a plain file, not
    /// through a link; -1 with errno set when it cannot be.
    package func openLog(_ id: String, file: String) -> Int32 {
        guard !file.contains("/") else {
            errno = EINVAL
            return -1
        }
        let logs = openLogsFolder(id, file: file)
        guard logs >= 0 else { return -1 }
        defer { close(logs) }
        let log = openat(logs, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard log >= 0 else { return -1 }
        var info = stat()
        guard fstat(log, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(log)
            errno = EINVAL
            return -1
        }
        return log
    }

    /// The bytes of a file in run `id`'s folder, `relative` to it
    /// (`outputs/000042-NAME.1`, as `RecordedRun.Task.outputsFile` names
    /// it): each folder on the way and the file opened without following a
    /// link; nil when it is not there or not a plain file.
    package func recordFile(_ id: String, _ relative: String) -> [UInt8]? {
        let parts = relative.split(separator: "/").map(String.init)
        guard let name = parts.last, !parts.contains(".."), !parts.contains(".") else { return nil }
        var folder = openFolder(id)
        guard folder >= 0 else { return nil }
        for part in parts.dropLast() {
            let next = openat(folder, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(folder)
            guard next >= 0 else { return nil }
            folder = next
        }
        defer { close(folder) }
        return RecordFile.read(folder, name, limit: nil)
    }

    /// The report a join wrote when it completed (`joins/JOIN.json`), nil if there is none.
    package func joinReport(_ id: String, join: String) -> JoinReport? {
        guard !join.contains("/") else { return nil }
        let joins = openFolder(id, "joins")
        guard joins >= 0 else { return nil }
        defer { close(joins) }
        guard let bytes = RecordFile.read(joins, join + ".json", limit: 256 * 1024 * 1024),
              let document = JSONValue.parse(bytes: bytes) else { return nil }
        return JoinReport(recorded: document, path: folderPath(id) + "/joins/" + join + ".json")
    }
}

extension JoinReport {
    /// A report as `joins/JOIN.json` holds it (`json()`), back as a value the
    /// block renderer draws.
    init?(recorded document: JSONValue, path: String) {
        guard let name = document["join"]?.string, let status = document["status"]?.string.flatMap(TaskStatus.init(rawValue:)) else { return nil }
        let members: [Member] = (document["results"]?.array ?? []).compactMap { result in
            guard let name = result["name"]?.string else { return nil }
            let values = (result["values"]?.array ?? []).compactMap { value -> Value? in
                guard let key = value["key"]?.string, let text = value["value"]?.string else { return nil }
                return Value(key: key, text: text, isStdout: key == "stdout")
            }
            return Member(
                name: name, group: result["group"]?.string, item: result["item"]?.string,
                outcome: result["outcome"]?.string.flatMap(Outcome.init(rawValue:)) ?? .missing,
                duration: result["duration"]?.double, values: values, log: result["log"]?.string)
        }
        self.init(
            name: name, status: status, timedOut: document["timed_out"]?.bool ?? false,
            counted: document["members"]?.int ?? members.count, succeeded: document["succeeded"]?.int ?? 0,
            required: document["required"]?.int ?? 0, duration: document["duration"]?.double ?? 0,
            missing: (document["missing"]?.array ?? []).compactMap(\.string), members: members, path: path)
    }
}
