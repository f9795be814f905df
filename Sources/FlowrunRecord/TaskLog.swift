#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A task's log: everything an attempt printed, stdout and stderr.
///
/// Where it goes:
/// - With a `SmallLogPack`, the first bytes are kept in memory (at most
///   `SmallLogPack.largestPacked`); when the attempt ends with no more than
///   that, they are appended to `logs/small.pack`: no file, no 4 KiB block.
/// - Its own file, `logs/000/000042-NAME.log`, once it prints more, or once
///   the attempt has run a moment (`spill()`, called when its `task_started`
///   line is written): a running task's output can be followed
///   (`flowrun logs -f`), and what it printed is on disk whatever then
///   happens to flowrun. What a flowrun killed with SIGKILL loses: the
///   output of attempts that started in its last moment (0.1 s).
/// - Without a pack (or once an earlier attempt made the file), straight to
///   its file, made at the first byte: a task that prints nothing costs no
///   file. Creating a file is the largest kernel cost of a short task after
///   its spawn (17–56 µs on ext4 here, against ~2 µs for the pipe that
///   brings stderr to flowrun).
///
/// Every attempt of a task appends to the same file: the first one to make
/// it creates it (`O_EXCL`, `0600`), later ones reopen it. Both relative to
/// the held `logs/` folder and its shard (made with the first log in it),
/// never through a link.
///
/// Written by the pump's thread (or the HTTP thread) while the task's
/// output flows, `spill()` from the engine's queue: the state is behind a
/// lock.
package final class TaskLog: Sendable {
    /// The log as the user finds it, for messages.
    let path: String
    private let folder: RunFolder
    private let fileName: String
    /// The folder of `logs/` it goes in (`RecordFileName.shard`).
    private let shard: String
    /// The file's name without `.log`: what the pack's index names it by.
    private let stem: String
    /// The task's name, for what the pack keeps at hand until it settles.
    private let task: String
    private let pack: SmallLogPack?
    private let state: Mutex<State>

    private struct State {
        var descriptor: Int32 = -1
        /// Bytes kept for the pack; nil once the log goes to its file.
        var buffer: [UInt8]?
        /// Whether an earlier attempt may have made the file.
        var madeBefore: Bool
        var exists = false
        var closed = false
        var problem: String?
    }

    init(folder: RunFolder, shard: String, stem: String, task: String, path: String, exists: Bool, pack: SmallLogPack?) {
        self.folder = folder
        self.task = task
        self.shard = shard
        self.stem = stem
        fileName = stem + ".log"
        self.path = path
        self.pack = pack
        var state = State(madeBefore: exists)
        // An earlier attempt's file: this one appends to it (its bytes come after the file's).
        if pack != nil, !(exists && Self.fileExists(folder: folder, shard: shard, name: stem + ".log")) { state.buffer = [] }
        self.state = Mutex(state)
    }

    /// Why output could not be written (the file could not be created, the
    /// disk is full), the first time it happened; the attempt fails with it,
    /// and so does the run.
    package var problem: String? { state.withLock { $0.problem } }

    /// Whether it holds anything (in its file or, once closed, the pack).
    package var exists: Bool { state.withLock { $0.exists } }

    package func write(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        state.withLock { state in
            if state.descriptor < 0, state.buffer != nil, !state.closed {
                if state.buffer!.count + bytes.count <= SmallLogPack.largestPacked {
                    state.buffer!.append(contentsOf: bytes)
                    state.exists = true
                    return
                }
                moveToFile(&state)
            }
            guard openIfNeeded(&state) else { return }
            if !writeAll(state.descriptor, bytes), state.problem == nil {
                fail(&state, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    package func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// The attempt has run a moment: what it printed goes to its file, and
    /// so does everything it prints from now on.
    package func spill() {
        state.withLock { state in
            guard !state.closed, state.buffer != nil else { return }
            moveToFile(&state)
        }
    }

    /// Lets go of the file's descriptor; the next write reopens the file,
    /// appending. An attempt that writes only now and then from outside (a
    /// Slurm job's output, copied at each poll) holds none in between: a
    /// 300-member fan-out on Slurm held 300 for as long as its jobs ran.
    package func releaseDescriptor() {
        state.withLock { state in
            guard state.descriptor >= 0 else { return }
            Glibc.close(state.descriptor)
            state.descriptor = -1
        }
    }

    /// The attempt ended: a log still in memory goes to the pack.
    package func close() {
        state.withLock { state in
            if state.descriptor >= 0 { Glibc.close(state.descriptor) }
            state.descriptor = -1
            if !state.closed, let buffer = state.buffer, !buffer.isEmpty, let pack, state.problem == nil {
                if let problem = pack.append(buffer, stem: stem, task: task) { state.problem = problem }
            }
            state.buffer = nil
            state.closed = true
        }
    }

    /// From memory to the file: the bytes kept so far first.
    private func moveToFile(_ state: inout State) {
        guard let buffer = state.buffer else { return }
        state.buffer = nil
        guard !buffer.isEmpty, openIfNeeded(&state) else { return }
        if !buffer.withUnsafeBytes({ writeAll(state.descriptor, $0) }), state.problem == nil {
            fail(&state, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    private func openIfNeeded(_ state: inout State) -> Bool {
        if state.descriptor >= 0 { return true }
        guard state.problem == nil else { return false }
        let (opened, reason) = folder.inLogsShard(shard, make: true) { [fileName, madeBefore = state.madeBefore, folder] logs in
            guard logs >= 0 else { return -1 }
            if madeBefore {
                let reopened = folder.reopenForAppending(fileName, in: logs)
                // An earlier attempt's log went to the pack, not to a file.
                if reopened >= 0 || errno != ENOENT { return reopened }
            }
            return folder.create(fileName, in: logs, appending: true)
        }
        state.descriptor = opened
        guard opened >= 0 else {
            fail(&state, "cannot create \(path): \(String(cString: strerror(reason)))")
            return false
        }
        state.madeBefore = true
        state.exists = true
        return true
    }

    private func fail(_ state: inout State, _ description: String) {
        state.problem = description
        folder.noteFailure(description)
    }

    private static func fileExists(folder: RunFolder, shard: String, name: String) -> Bool {
        var found = false
        _ = folder.inLogsShard(shard, make: false) { logs in
            var info = stat()
            found = logs >= 0 && fstatat(logs, name, &info, AT_SYMLINK_NOFOLLOW) == 0
            return 0
        }
        return found
    }
}
