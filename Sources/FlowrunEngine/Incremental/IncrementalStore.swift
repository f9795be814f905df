#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues
import FlowrunPlanning
import FlowrunRecord
import Synchronization

/// `.flowrun/state/`: what each incremental task's last successful run
/// saw, one file per task (named by a hash of the workflow's path and the
/// task's name, so any name is safe), private (`0700`/`0600`).
///
/// A file is written only after the task succeeded, to a fresh temporary
/// name and renamed into place: two overlapping runs each write a whole
/// file, the last rename wins, and a reader never sees half of one.
package final class IncrementalStore: Sendable {
    /// `.flowrun/state` as shown to the user.
    package let path: String
    private let descriptor: Int32
    private let workflowKey: String
    /// This workflow's snapshot in `state/snapshots/` (`StateSnapshot`): a hash of its path.
    private let snapshotName: String
    /// This run's content hashes, shared by every task's check.
    package let hashes = ContentHashCache()

    /// Why the store cannot be used (every task then runs), or the store.
    /// `.flowrun` is opened as the run record opens it (`RecordBase`): made
    /// `0700` whatever the umask (under umask 0277 a `.flowrun` made `0500`
    /// would refuse `runs/` to every later run), never through another
    /// user's link; `state` is made and opened in it without following one.
    package static func open(workflowFile: String) -> Result<IncrementalStore, Refusal> {
        let statePath = ".flowrun/state"
        let flowrun: Int32
        do throws(RecordBase.Refusal) {
            flowrun = try RecordBase.openDefault(in: ".", components: [".flowrun"], making: true, for: .write)
        } catch {
            return .failure(Refusal(description: error.description))
        }
        defer { close(flowrun) }
        let made = mkdirat(flowrun, "state", 0o700) == 0
        if !made && errno != EEXIST {
            return .failure(Refusal(description: "cannot create \(statePath): \(String(cString: strerror(errno)))"))
        }
        let descriptor = openat(flowrun, "state", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(Refusal(description: "cannot open \(statePath): \(String(cString: strerror(errno)))")) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            close(descriptor)
            return .failure(Refusal(description: "cannot check \(statePath)"))
        }
        if info.st_uid != geteuid() && info.st_uid != 0 {
            close(descriptor)
            return .failure(Refusal(description: "\(statePath) belongs to uid \(info.st_uid), not to you"))
        }
        if info.st_mode & 0o7777 != 0o700 {
            // Made by flowrun 0700 (the umask may have taken bits); anything else is fixed if ours.
            if info.st_uid != geteuid() || fchmod(descriptor, 0o700) != 0 {
                close(descriptor)
                return .failure(Refusal(description: "\(statePath) is open to other users (mode 0\(String(info.st_mode & 0o7777, radix: 8)))"))
            }
        }
        // With the state folder, so that a snapshot's first write needs no folder made (`StateSnapshot.write`).
        if made { mkdirat(descriptor, StateSnapshot.folderName, 0o700) }
        var key = workflowFile
        if let resolved = realpath(workflowFile, nil) {
            key = String(cString: resolved)
            free(resolved)
        }
        return .success(IncrementalStore(path: statePath, descriptor: descriptor, workflowKey: key))
    }

    package struct Refusal: Error, CustomStringConvertible {
        package var description: String
    }

    private init(path: String, descriptor: Int32, workflowKey: String) {
        self.path = path
        self.descriptor = descriptor
        self.workflowKey = workflowKey
        var sha = SHA256()
        sha.field(workflowKey)
        snapshotName = sha.finalize()
    }

    deinit { close(descriptor) }

    private func fileName(task: String) -> String {
        var sha = SHA256()
        sha.field(workflowKey)
        sha.field(task)
        return sha.finalize() + ".json"
    }

    /// Tasks the check before the supervisor split found up to date, in a
    /// run it found starts no task (`IncrementalPreview.startsNoTask`): the
    /// engine settles each on that decision instead of checking again, so
    /// it cannot come to another one (and start a task unsupervised).
    private let decided = Mutex<[String: UpToDate]>([:])

    package func keep(_ decisions: [String: UpToDate]) {
        decided.withLock { $0.merge(decisions) { _, new in new } }
    }

    /// The decision kept for `task`, taken (a watch's later runs check again).
    func takeDecision(task: String) -> UpToDate? {
        decided.withLock { $0.removeValue(forKey: task) }
    }

    /// Entries of the state files read so far, each kept once (`StateEntryPool`).
    private let entries = Mutex(StateEntryPool())

    /// The task's last successful run, if any and readable.
    package func read(task: String) -> IncrementalRecord? {
        let name = fileName(task: task)
        // Held outside the lock: the mapping is immutable, and lives while referenced.
        if let found = snapshot.withLock({ $0.found }), let entry = found.entry(name) {
            guard let range = entry else { return nil }
            return found.withBytes(range) { bytes in entries.withLock { IncrementalRecord(buffer: bytes, task: task, pool: &$0) } }
        }
        let bytes = readFile(name)
        snapshot.withLock { $0.read(name, bytes) }
        guard let bytes else { return nil }
        return entries.withLock { IncrementalRecord(bytes: bytes, task: task, pool: &$0) }
    }

    /// A state file's bytes, nil when there is none that is a readable plain file.
    private func readFile(_ name: String) -> [UInt8]? {
        // O_NONBLOCK: a named pipe at the name (mkfifo) is opened without waiting for a
        // writer, then refused as no plain file; opening it blocked the run for good.
        let file = openat(descriptor, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        // Sized by fstat and read into it unfilled: a 64 KiB chunk zeroed
        // for each of a no-op run's 43 reads of ~600 bytes was a tenth of its check.
        var info = stat()
        guard fstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= 64 << 20 else { return nil }
        let capacity = Int(info.st_size) + 1  // one more: a file grown since the fstat is read to its end below
        var bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            while count < capacity {
                let got = Glibc.read(file, buffer.baseAddress! + count, capacity - count)
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else { break }
                count += got
                // A plain file reads short only at its end: no second read to hear it (43 calls a no-op run).
                if count < capacity { break }
            }
        }
        // Grown since the fstat (a rename replaced it under the name, not
        // this file): the rest, as the loop before read it.
        if bytes.count == capacity {
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                bytes += chunk[0..<count]
                guard bytes.count <= 64 << 20 else { return nil }
            }
        }
        return bytes
    }

    // MARK: Snapshot

    /// This run's use of its workflow's snapshot (`StateSnapshot`).
    private let snapshot = Mutex(SnapshotUse())


    /// Reads the state through this workflow's snapshot from now on, if the
    /// `state` folder is as the snapshot found it; and notes the folder's
    /// stamp now, before any state file is read, for `saveSnapshot`. For
    /// one run (a watch's later runs read the files).
    package func useSnapshot() {
        // The clock before the stat: a stamp settled by it was settled at the stat.
        let now = FileStamp.coarseNow()
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return }
        let stamp = FileStamp(info)
        // Times in whole seconds: a clock set back into the second of the
        // folder's last change, then a state file removed, and the folder's
        // stamp is the one the snapshot holds (a removed state stayed up to
        // date). Such a folder is read file by file, as before snapshots.
        // A network file system: the folder's stamp may be a cached one (`StateSnapshot.sharedFileSystems`).
        guard stamp.hasSubsecondTimes, StateSnapshot.trustsFolderStamps(of: descriptor) else {
            snapshot.withLock { $0 = SnapshotUse() }
            return
        }
        let found = MappedStateSnapshot.read(in: descriptor, name: snapshotName)
        snapshot.withLock { use in
            use = SnapshotUse()
            use.active = true
            use.startStamp = stamp.isSettled(readStart: now) ? stamp : nil
            if let found, found.folderStamp == stamp { use.found = found }
        }
    }

    /// Writes this workflow's snapshot if this run read a state file the
    /// snapshot did not hold, and the `state` folder did not change since
    /// `useSnapshot` (this run wrote no state, nor did another) and was
    /// settled then. Ends the snapshot's use.
    package func saveSnapshot() {
        guard let (stamp, files) = snapshot.withLock({ use -> (FileStamp, [String: [UInt8]?])? in
            defer { use = SnapshotUse() }
            guard use.active, let stamp = use.startStamp, !use.readFiles.isEmpty else { return nil }
            return (stamp, (use.found?.copiedFiles() ?? [:]).merging(use.readFiles) { _, new in new })
        }) else { return }
        var info = stat()
        guard fstat(descriptor, &info) == 0, FileStamp(info) == stamp else { return }
        StateSnapshot(folderStamp: stamp, files: files).write(in: descriptor, name: snapshotName)
    }

    /// Writes the record under a fresh name, then renames it into place.
    package func write(_ record: IncrementalRecord, task: String) {
        let name = fileName(task: task)
        // The snapshot no longer says what the folder holds (the rename changes its stamp too).
        snapshot.withLock { $0 = SnapshotUse() }
        var generator = SystemRandomNumberGenerator()
        let temporary = name + ".tmp-" + String(generator.next() as UInt64, radix: 16)
        let file = openat(descriptor, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard file >= 0 else { return }
        var text = record.json(task: task)
        let written = text.withUTF8 { bytes -> Bool in
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(file, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        close(file)
        if !written || renameat(descriptor, temporary, descriptor, name) != 0 {
            unlinkat(descriptor, temporary, 0)
        }
    }
}

/// One incremental task's last successful run: its identity, the content
/// hashes of its sources before it ran and of what it generated after,
/// and its stash (secrets shown as `***`, as in the run record).
package struct IncrementalRecord: Sendable, Equatable {
    package var identity: String
    package var sources: [PathHash]
    package var generates: [PathHash]
    package var stdout: String
    package var exitCode: Int?
    package var outputs: [KeyValue]

    /// A path and its content hash; compared by those two alone.
    package struct PathHash: Sendable, Equatable {
        package var path: String
        package var hash: String
        /// The file's stamp when it was hashed, if settled then: a way to
        /// find the hash again without reading, not part of what was seen.
        package var stamp: FileStamp?

        package init(path: String, hash: String, stamp: FileStamp? = nil) {
            self.path = path
            self.hash = hash
            self.stamp = stamp
        }

        /// Stands for the sources of a task one of which matched and could not be read.
        package static let unreadable = PathHash(path: "", hash: "unreadable")

        /// Paths by their bytes: Swift's `==` finds `café` (U+00E9) and `café` (e, U+0301)
        /// equal, but they name two files, and a source renamed from one to the other is a change.
        package static func == (first: PathHash, second: PathHash) -> Bool {
            first.path.hasSameBytes(as: second.path) && first.hash == second.hash
        }
    }

    package struct KeyValue: Sendable, Equatable {
        package var key: String
        package var value: String
    }

    package init(identity: String, sources: [PathHash], generates: [PathHash], stdout: String, exitCode: Int?, outputs: [KeyValue]) {
        self.identity = identity
        self.sources = sources
        self.generates = generates
        self.stdout = stdout
        self.exitCode = exitCode
        self.outputs = outputs
    }

    /// This record with the stamps of `sources` and `generates` (the same
    /// paths and hashes, hashed again), or nil when it holds them already.
    func withStamps(sources: [PathHash], generates: [PathHash]) -> IncrementalRecord? {
        // Compared in place, by index: four arrays of stamps a task were made to compare them.
        func sameStamps(_ first: [PathHash], _ second: [PathHash]) -> Bool {
            guard first.count == second.count else { return false }
            for index in first.indices where first[index].stamp != second[index].stamp { return false }
            return true
        }
        guard !sameStamps(sources, self.sources) || !sameStamps(generates, self.generates) else { return nil }
        var record = self
        record.sources = sources
        record.generates = generates
        return record
    }

    func json(task: String) -> String {
        // [path, hash] or, with a settled stamp, [path, hash, stamp].
        func pairs(_ list: [PathHash]) -> String {
            "[" + list.map { item in
                "[" + JSONText.quoted(item.path) + "," + JSONText.quoted(item.hash) + (item.stamp.map { "," + JSONText.quoted($0.text) } ?? "") + "]"
            }.joined(separator: ",") + "]"
        }
        var text = "{\"version\":1,\"task\":" + JSONText.quoted(task) + ",\"identity\":" + JSONText.quoted(identity)
        text += ",\"sources\":" + pairs(sources) + ",\"generates\":" + pairs(generates)
        text += ",\"stdout\":" + JSONText.quoted(stdout) + ",\"exit_code\":" + (exitCode.map(String.init) ?? "null")
        text += ",\"outputs\":[" + outputs.map { "[" + JSONText.quoted($0.key) + "," + JSONText.quoted($0.value) + "]" }.joined(separator: ",") + "]}\n"
        return text
    }

    /// A state file's content: the writer's shape read straight from the
    /// bytes (`StateFileScanner`), anything else by the general JSON reader.
    init?(bytes: [UInt8], task: String) {
        var pool = StateEntryPool()
        self.init(bytes: bytes, task: task, pool: &pool)
    }

    /// The same, entries read before found in `pool` (`StateEntryPool`).
    init?(bytes: [UInt8], task: String, pool: inout StateEntryPool) {
        guard let record = bytes.withUnsafeBufferPointer({ IncrementalRecord(buffer: $0, task: task, pool: &pool) }) else { return nil }
        self = record
    }

    /// The same from bytes in place (a mapped snapshot's).
    init?(buffer: UnsafeBufferPointer<UInt8>, task: String, pool: inout StateEntryPool) {
        var scanner = StateFileScanner(buffer)
        if let record = scanner.record(task: task, pool: &pool) {
            self = record
            return
        }
        self.init(parsed: JSONValue.parse(bytes: Array(buffer)), task: task)
    }

    init?(json: String, task: String) {
        self.init(parsed: JSONValue.parse(json), task: task)
    }

    private init?(parsed: JSONValue?, task: String) {
        guard case .object(let members)? = parsed else { return nil }
        var fields: [String: JSONValue] = [:]
        for member in members { fields[member.key] = member.value }
        guard fields["version"] == .number("1"), fields["task"] == .string(task),
              case .string(let identity)? = fields["identity"], case .string(let stdout)? = fields["stdout"],
              let sources = Self.pathHashes(fields["sources"]), let generates = Self.pathHashes(fields["generates"]),
              let outputs = Self.pairs(fields["outputs"])
        else { return nil }
        self.identity = identity
        self.sources = sources
        self.generates = generates
        self.stdout = stdout
        if case .number(let code)? = fields["exit_code"] { exitCode = Int(code) } else { exitCode = nil }
        self.outputs = outputs.map { KeyValue(key: $0.0, value: $0.1) }
    }

    /// [path, hash] pairs, each with a stamp as a third string or not (a
    /// stamp that does not read is dropped: the file is then read again).
    private static func pathHashes(_ value: JSONValue?) -> [PathHash]? {
        guard case .array(let items)? = value else { return nil }
        var result: [PathHash] = []
        for item in items {
            guard case .array(let fields) = item, fields.count == 2 || fields.count == 3,
                  case .string(let path) = fields[0], case .string(let hash) = fields[1]
            else { return nil }
            var stamp: FileStamp?
            if fields.count == 3, case .string(let text) = fields[2] { stamp = FileStamp(text: text) }
            result.append(PathHash(path: path, hash: hash, stamp: stamp))
        }
        return result
    }

    private static func pairs(_ value: JSONValue?) -> [(String, String)]? {
        guard case .array(let items)? = value else { return nil }
        var result: [(String, String)] = []
        for item in items {
            guard case .array(let pair) = item, pair.count == 2, case .string(let first) = pair[0], case .string(let second) = pair[1] else { return nil }
            result.append((first, second))
        }
        return result
    }
}
