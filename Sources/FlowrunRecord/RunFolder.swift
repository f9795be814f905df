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
    /// The folder as the user named it: `BASE/RUN_ID`.
    let path: String
    /// The run folder. Held with an exclusive `flock` for the whole run:
    /// how `flowrun show` tells a live run, and why pruning never removes one.
    let descriptor: Int32
    /// The folder the run folder was made in (`.flowrun/runs`, `--log-dir`),
    /// held for `latest` and pruning.
    let base: Int32
    /// `logs/`, opened once: a task that replaces it cannot redirect a log.
    let logs: Int32
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

    /// Makes `BASE/RUN_ID` (a new id if one is taken) with `logs/` and
    /// `outputs/` in it (the shards of `logs/`, `logs/000/`, come as tasks
    /// need them). `base` nil means `.flowrun/runs` under the current directory.
    init(base: String?, makeRunID: () -> String) throws(Refusal) {
        let baseDescriptor = try Self.openBase(base)
        let base = base ?? ".flowrun/runs"
        var made: (id: String, descriptor: Int32)?
        var umaskNarrowsModes = false
        var lastError: Int32 = 0
        for _ in 0..<8 {
            let id = makeRunID()
            guard mkdirat(baseDescriptor, id, 0o700) == 0 else {
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
            made = (id, opened.descriptor)
            umaskNarrowsModes = opened.narrowed
            break
        }
        guard let made else {
            close(baseDescriptor)
            throw Refusal(description: "cannot create a run folder in \(base): \(String(cString: strerror(lastError)))")
        }
        runID = made.id
        self.umaskNarrowsModes = umaskNarrowsModes
        path = base + "/" + made.id
        descriptor = made.descriptor
        self.base = baseDescriptor
        var logs: Int32 = -1
        do throws(Refusal) {
            logs = try Self.makeFolder("logs", in: descriptor, shownAs: path + "/logs")
            close(try Self.makeFolder("outputs", in: descriptor, shownAs: path + "/outputs"))
        } catch {
            if logs >= 0 { close(logs) }
            close(descriptor)
            close(baseDescriptor)
            throw error
        }
        self.logs = logs
        // Held from before the first task: the record's opens can fall back on it.
        DescriptorReserve.refill()
        (pathForFlowrun, procNamesHandle) = Self.handlePath(descriptor: descriptor, path: path)
    }

    deinit {
        heldLogsShard.withLock { if let held = $0 { close(held.descriptor) } }
        close(logs)
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
            let opened = Self.openShard(shard, in: logs, make: make)
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

    /// Makes a fresh folder `name` in `parent`, `0700`, and opens it.
    private static func makeFolder(_ name: String, in parent: Int32, shownAs path: String) throws(Refusal) -> Int32 {
        guard mkdirat(parent, name, 0o700) == 0 else {
            throw Refusal(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        return try openMade(name, in: parent, shownAs: path).descriptor
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
