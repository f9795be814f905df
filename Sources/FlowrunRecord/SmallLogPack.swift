#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Small logs of short attempts, many in one file: `logs/small.pack` holds
/// their bytes one after another, `logs/small.index` one line per log,
/// `OFFSET LENGTH STEM` (`0 3 000042-work_41_`), written after its bytes,
/// so an index line never names bytes that are not there. A task's log is
/// its entries in the index's order (one per attempt that printed and ended
/// within a moment), then its own file, if it has one: once a task has a
/// file, its later attempts write there (`TaskLog`).
///
/// Why: a file per log costs an inode and a 4 KiB block however little the
/// task printed (20,000 `echo hi` members: 80 MB on disk for 60 bytes of
/// output), and creating a file is the largest kernel cost of a short task
/// after its spawn. Both files are `0600`, made at the first small log.
///
/// Shared by every task's log: appended under a lock (the pump's thread
/// and the HTTP thread close logs too).
package final class SmallLogPack: Sendable {
    static let packName = "small.pack"
    static let indexName = "small.index"
    /// A log is packed only while it is at most this long; past it, it
    /// goes to its own file. Memory held: this much per task printing at
    /// once, at most.
    package static let largestPacked = 4096

    private let folder: RunFolder
    private let state = Mutex(State())

    private struct State {
        var pack: Int32 = -1
        var index: Int32 = -1
        var length: Int = 0
        var problem: String?
        /// What tasks not settled yet have in the pack, by task: the
        /// engine's `log_tail` of a failure reads it from here, not by
        /// searching the index (a million lines). Dropped as each settles.
        var unsettled: [String: [UInt8]] = [:]
    }

    init(folder: RunFolder) {
        self.folder = folder
    }

    deinit {
        state.withLock { state in
            if state.pack >= 0 { close(state.pack) }
            if state.index >= 0 { close(state.index) }
        }
    }

    /// Appends the log `bytes` of the task whose files are named `stem`.
    /// Nil when written, else why not (the run fails with it).
    func append(_ bytes: [UInt8], stem: String, task: String) -> String? {
        state.withLock { state -> String? in
            state.unsettled[task, default: []] += bytes
            if let problem = state.problem { return problem }
            if state.pack < 0 {
                let logs = folder.logsFolder(make: true)
                state.pack = folder.create(Self.packName, in: logs, appending: true)
                if state.pack < 0 { return fail(&state, Self.packName) }
                state.index = folder.create(Self.indexName, in: logs, appending: true)
                if state.index < 0 { return fail(&state, Self.indexName) }
            }
            guard bytes.withUnsafeBytes({ writeAll(state.pack, $0) }) else { return fail(&state, Self.packName) }
            let line = String(state.length) + " " + String(bytes.count) + " " + stem + "\n"
            state.length += bytes.count
            var text = line
            guard text.withUTF8({ writeAll(state.index, UnsafeRawBufferPointer($0)) }) else { return fail(&state, Self.indexName) }
            return nil
        }
    }

    /// What `task`'s attempts so far put in the pack.
    func packed(task: String) -> [UInt8] {
        state.withLock { $0.unsettled[task] ?? [] }
    }

    /// `task` settled: its bytes in the pack are no longer needed at hand.
    func settled(task: String) {
        state.withLock { state in
            if !state.unsettled.isEmpty { state.unsettled[task] = nil }
        }
    }

    private func fail(_ state: inout State, _ name: String) -> String {
        let problem = "cannot write \(folder.path)/logs/\(name): \(String(cString: strerror(errno)))"
        state.problem = problem
        folder.noteFailure(problem)
        return problem
    }
}
