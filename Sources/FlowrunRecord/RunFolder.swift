import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The run's folder, made fresh and held open for the whole run (SPEC §11):
/// every record file is opened relative to these descriptors, never by a
/// path another user could redirect, and with `O_NOFOLLOW|O_EXCL` when made.
///
/// Made with `mkdir` under a base folder that only flowrun's user (or root)
/// controls: `.flowrun/runs` (or `--log-dir`), created `0700` when missing.
/// Folders are `0700` and files `0600` whatever the umask.
///
/// Shared between the engine's queue and the pump's thread: the descriptors
/// never change, and the first write failure sits behind a `Mutex`.
package final class RunFolder: Sendable {
    /// The run's id, the folder's name.
    let runID: String
    /// The instant the id names (`RunStart`).
    let start: RunStart
    /// The folder as the user named it: `BASE/RUN_ID`.
    let path: String
    /// The run folder. Held with an exclusive `flock` for the whole run:
    /// how `flowrun show` tells a live run, and why pruning never removes one.
    let descriptor: Int32
    /// The folder the run folder was made in (`.flowrun/runs`, `--log-dir`),
    /// held for `latest` and pruning.
    let base: Int32
    /// `logs/` once made (-1 before): made at the first log, then held, so
    /// that a task that replaces it cannot redirect a log. A run whose tasks
    /// print nothing (every task up to date) makes no `logs/` at all: a
    /// folder costs its record a `mkdir` and its pruning an `rmdir`, each
    /// a block freed and, on a filesystem mounted with `discard`, a
    /// synchronous discard (docs/BENCHMARKS.md, "The no-op run").
    private let madeLogs = Mutex<Int32>(-1)
    /// Whether `outputs/` was made (at the first task's start).
    private let madeOutputs = Mutex<Bool>(false)
    /// How flowrun names the folder it holds: `/proc/self/fd/N` where /proc
    /// says so, else the folder's absolute path.
    package let pathForFlowrun: String
    /// Whether `pathForFlowrun` is the /proc handle.
    private let procNamesHandle: Bool
    /// Whether the umask takes bits from `0600`/`0700`, so that every file
    /// made needs an `fchmod`.
    let umaskNarrowsModes: Bool
    /// The first record file that could not be written, and why.
    private let firstFailure = Mutex<String?>(nil)
    /// The shard of `logs/` used last (`RecordFileName.shard`), held open:
    /// tasks run roughly in index order, so one is enough.
    private let heldLogsShard = Mutex<HeldShard?>(nil)

    private struct HeldShard {
        var name: String
        var descriptor: Int32
    }

    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// Makes `BASE/RUN_ID` (a new id if one is taken); `logs/`, its shards
    /// (`logs/000/`) and `outputs/` come as tasks need them. `base` nil
    /// means `.flowrun/runs` under the current directory. Each id tried is
    /// drawn afresh, from a clock reading of its own (`makeRunID`).
    init(base: String?, makeRunID: (RunStart) -> String) throws(Refusal) {
        let baseDescriptor = try Self.openBase(base)
        let base = base ?? ".flowrun/runs"
        var made: (id: String, start: RunStart, descriptor: Int32)?
        var umaskNarrowsModes = false
        var lastError: Int32 = 0
        for _ in 0..<8 {
            let start = RunStart.now()
            let id = makeRunID(start)
            guard Self.takeSpare(in: baseDescriptor, as: id) || mkdirat(baseDescriptor, id, 0o700) == 0 else {
                lastError = errno
                if lastError == EEXIST { continue }  // taken (or planted): another id
                break
            }
            let opened: (descriptor: Int32, narrowed: Bool)
            do throws(Refusal) {
                opened = try Self.openMade(id, in: baseDescriptor, shownAs: base + "/" + id)
            } catch {
                close(baseDescriptor)
                throw error
            }
            // Live from here on: the lock goes when this process does, whatever ends it.
            flock(opened.descriptor, LOCK_EX | LOCK_NB)
            made = (id, start, opened.descriptor)
            umaskNarrowsModes = opened.narrowed
            break
        }
        guard let made else {
            close(baseDescriptor)
            throw Refusal(description: "cannot create a run folder in \(base): \(String(cString: strerror(lastError)))")
        }
        runID = made.id
        start = made.start
        self.umaskNarrowsModes = umaskNarrowsModes
        path = base + "/" + made.id
        descriptor = made.descriptor
        self.base = baseDescriptor
        // Held from before the first task: the record's opens can fall back on it.
        DescriptorReserve.refill()
        (pathForFlowrun, procNamesHandle) = Self.handlePath(descriptor: descriptor, path: path)
    }

    deinit {
        heldLogsShard.withLock { if let held = $0 { close(held.descriptor) } }
        madeLogs.withLock { if $0 >= 0 { close($0) } }
        close(descriptor)
        close(base)
    }

    // MARK: Shards

    /// Runs `body` with the descriptor of `logs/SHARD/` (made `0700` when
    /// missing, if `make`), or with -1 when it cannot be opened; `body`'s
    /// errno is kept. Serialised: the pump's thread and the engine's queue
    /// both open logs.
    func inLogsShard(_ shard: String, make: Bool, _ body: (Int32) -> Int32) -> (result: Int32, errno: Int32) {
        heldLogsShard.withLock { held -> (result: Int32, errno: Int32) in
            if let current = held, current.name == shard {
                let result = body(current.descriptor)
                return (result, errno)
            }
            let logs = logsFolder(make: make)
            let opened = logs >= 0 ? Self.openShard(shard, in: logs, make: make) : -1
            guard opened >= 0 else {
                let reason = errno
                _ = body(-1)
                return (-1, reason)
            }
            if let current = held { close(current.descriptor) }
            held = HeldShard(name: shard, descriptor: opened)
            let result = body(opened)
            return (result, errno)
        }
    }

    /// `logs/`, made `0700` (and held) at the first call with `make`; -1
    /// with errno set when it is not there yet (`make` false) or cannot be
    /// made. One a task made first must be a folder of flowrun's user, never
    /// a link; it is made `0700`, as a shard is.
    func logsFolder(make: Bool) -> Int32 {
        madeLogs.withLock { logs -> Int32 in
            if logs >= 0 { return logs }
            guard make else {
                errno = ENOENT
                return -1
            }
            logs = Self.openShard("logs", in: descriptor, make: true)
            return logs
        }
    }

    /// Makes `outputs/` (`0700`) if this run has not yet: before a task is
    /// given its `$FLOWRUN_OUTPUT` path there. Nil when there, else why not.
    func makeOutputsFolder() -> String? {
        madeOutputs.withLock { made -> String? in
            if made { return nil }
            guard mkdirat(descriptor, "outputs", 0o700) == 0 || errno == EEXIST else {
                return "cannot create \(path)/outputs: \(String(cString: strerror(errno)))"
            }
            let folder = Self.openShard("outputs", in: descriptor, make: false)
            guard folder >= 0 else { return "cannot create \(path)/outputs: \(String(cString: strerror(errno)))" }
            close(folder)
            made = true
            return nil
        }
    }

    /// Opens shard folder `name` in `parent` (a folder of this record),
    /// never through a link, making it `0700` first if `make`. One already
    /// there must be flowrun's user's (a task of the run may have made it)
    /// and is made `0700`. -1 with errno set when it cannot be.
    private static func openShard(_ name: String, in parent: Int32, make: Bool) -> Int32 {
        if make, mkdirat(parent, name, 0o700) != 0, errno != EEXIST { return -1 }
        let folder = DescriptorReserve.opening { openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        guard folder >= 0 else { return -1 }
        var info = stat()
        guard fstat(folder, &info) == 0, info.st_uid == geteuid() else {
            close(folder)
            errno = EPERM
            return -1
        }
        if info.st_mode & 0o7777 != 0o700 { fchmod(folder, 0o700) }
        return folder
    }

    // MARK: Files

    /// Creates `name` in `folder` (a descriptor of this record) for writing:
    /// never through a link, never an existing file. -1 with errno set.
    func create(_ name: String, in folder: Int32, appending: Bool = false) -> Int32 {
        // A folder that could not be made: its errno stands.
        guard folder >= 0 else { return -1 }
        let file = DescriptorReserve.opening {
            openat(folder, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | (appending ? O_APPEND : 0), 0o600)
        }
        if file >= 0, umaskNarrowsModes { fchmod(file, 0o600) }
        return file
    }

    /// Opens a record file this run made before (a log that an earlier
    /// attempt wrote): not through a link, and only if it is still a plain
    /// file with one name. -1 with errno set.
    func reopenForAppending(_ name: String, in folder: Int32) -> Int32 {
        let file = DescriptorReserve.opening { openat(folder, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        guard file >= 0 else { return -1 }
        var info = stat()
        guard fstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1, info.st_uid == geteuid() else {
            close(file)
            errno = EPERM
            return -1
        }
        return file
    }

    /// Opens `outputs/NAME` for reading, relative to the run folder and
    /// never through a link (a task may have replaced `outputs/`, so the
    /// folder is looked up again). -1 if it is not there or not a plain file.
    package func openOutputsFile(_ name: String) -> Int32 {
        let outputs = openat(descriptor, "outputs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard outputs >= 0 else { return -1 }
        defer { close(outputs) }
        let file = openat(outputs, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else { return -1 }
        var info = stat()
        guard fstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(file)
            return -1
        }
        // The task made it with its umask: private like every other record file.
        if info.st_mode & 0o7777 != 0o600, info.st_uid == geteuid() { fchmod(file, 0o600) }
        return file
    }

    // MARK: Failures

    /// Notes that a record file could not be written; the first one is kept.
    func noteFailure(_ description: String) {
        firstFailure.withLock { if $0 == nil { $0 = description } }
    }

    /// The first record write that failed ("cannot write PATH: REASON"), if any.
    var failure: String? { firstFailure.withLock { $0 } }

    // MARK: Making the folders

    /// Opens the base folder, making it (and missing parents) `0700`
    /// (`RecordBase`): one another user could redirect is refused, the way
    /// ssh refuses a key in a loose folder.
    private static func openBase(_ base: String?) throws(Refusal) -> Int32 {
        do throws(RecordBase.Refusal) {
            guard let base else { return try RecordBase.openDefault(in: ".", making: true, for: .write) }
            return try RecordBase.open(base, making: true, for: .write)
        } catch {
            throw Refusal(description: error.description)
        }
    }

    /// Renames the folder the last pruning emptied and kept
    /// (`RecordPruning.spareName`) to `id`, if there is one: a run folder
    /// without a `mkdir`, as the pruning spared an `rmdir` (on a filesystem
    /// mounted with `discard`, each frees a block with a synchronous discard:
    /// milliseconds on a busy disk). Only an empty, private folder of
    /// flowrun's user is taken, never over anything; `openMade` then checks
    /// what is there as it checks a folder just made.
    private static func takeSpare(in base: Int32, as id: String) -> Bool {
        let spare = openat(base, RecordPruning.spareName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard spare >= 0 else { return false }
        defer { close(spare) }
        var info = stat()
        guard fstat(spare, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 == 0, isEmpty(spare) else { return false }
        var existing = stat()
        guard fstatat(base, id, &existing, AT_SYMLINK_NOFOLLOW) != 0, errno == ENOENT else { return false }
        return renameat(base, RecordPruning.spareName, base, id) == 0
    }

    /// Whether the folder open as `folder` holds nothing.
    private static func isEmpty(_ folder: Int32) -> Bool {
        let copy = openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard copy >= 0, let listing = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return false
        }
        defer { closedir(listing) }
        while let entry = readdir(listing) {
            let isDots = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                raw[0] == UInt8(ascii: ".") && (raw[1] == 0 || (raw[1] == UInt8(ascii: ".") && raw[2] == 0))
            }
            if !isDots { return false }
        }
        return true
    }

    /// Opens the run folder just made in `base` and checks it is the one
    /// flowrun made (its own, private, not a link swapped in), then forces
    /// `0700`; `narrowed` tells whether the umask had taken bits from it.
    private static func openMade(_ name: String, in base: Int32, shownAs path: String) throws(Refusal) -> (descriptor: Int32, narrowed: Bool) {
        let folder = openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else {
            throw Refusal(description: "cannot open \(path) right after making it: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(folder, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            close(folder)
            throw Refusal(description: "\(path) was replaced right after flowrun made it; nothing written")
        }
        let narrowed = info.st_mode & 0o7777 != 0o700
        if narrowed { fchmod(folder, 0o700) }
        return (folder, narrowed)
    }

    /// How a task names the run folder: through flowrun's own handle on it
    /// (`/proc/PID/fd/N`, PID being the process that holds it and starts the
    /// tasks), so a task writes its `$FLOWRUN_OUTPUT` file into this run's
    /// folder even if the path were swapped; the absolute path where /proc
    /// cannot say so.
    func pathForTasks() -> String {
        procNamesHandle ? "/proc/\(getpid())/fd/\(descriptor)" : pathForFlowrun
    }

    /// `/proc/self/fd/N` when that names the folder held, else its absolute
    /// path (what a task with its own `cwd:` can use too).
    private static func handlePath(descriptor: Int32, path: String) -> (String, isHandle: Bool) {
        let own = "/proc/self/fd/\(descriptor)"
        var viaProc = stat()
        var held = stat()
        if stat(own, &viaProc) == 0, fstat(descriptor, &held) == 0, viaProc.st_dev == held.st_dev, viaProc.st_ino == held.st_ino {
            return (own, true)
        }
        if path.hasPrefix("/") { return (path, false) }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return (path, false) }
        return (String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + path, false)
    }
}
