#if canImport(Glibc)
import Glibc
#endif
import FlowrunRecord

/// The whole stdout of one attempt on disk, once it is longer than the stash
/// holds in memory, so that a `foreach` over `tasks.T.stdout` reads every
/// line (SPEC §2: a value is never cut silently). Progress lines are left
/// out, as from the stash; stderr is not in it (the log mixes both).
///
/// Created only when needed: most tasks print far less than 1 MiB.
/// Not thread-safe: used by whoever owns the `StdoutCapture` that holds it
/// (the pump's thread while output flows, the engine's queue after).
final class StdoutSpill: @unchecked Sendable {
    let path: String
    private var descriptor: Int32 = -1
    /// Why the spill could not be written, the first time it happened; the attempt fails with it.
    private(set) var problem: String?
    private(set) var byteCount = 0

    init(path: String) {
        self.path = path
    }

    /// `logs/TASK.log` → `logs/TASK.log.N.stdout`: next to the task's log, one per attempt.
    static func path(forLog logPath: String, attempt: Int) -> String {
        RunFolderFile.path(forLog: logPath, attempt: attempt, suffix: "stdout")
    }

    /// Where a spill would go, its path made only if one is needed: most
    /// attempts never spill, and a string per attempt showed in the memory
    /// of 20,000 tasks.
    struct Location: Sendable {
        private let base: String
        private let attempt: Int?

        /// Next to the task's log, for this attempt.
        init(log logPath: String, attempt: Int) {
            base = logPath
            self.attempt = attempt
        }

        /// Exactly `path`.
        init(path: String) {
            base = path
            attempt = nil
        }

        var path: String { attempt.map { StdoutSpill.path(forLog: base, attempt: $0) } ?? base }
    }

    func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count > 0, problem == nil else { return }
        if descriptor < 0 {
            let created = RunFolderFile.create(path)
            descriptor = created.descriptor
            problem = created.problem
            guard problem == nil else { return }
        }
        if writeAll(descriptor, UnsafeRawBufferPointer(bytes)) {
            byteCount += bytes.count
        } else if problem == nil {
            problem = "cannot write \(path): \(String(cString: strerror(errno)))"
        }
    }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    deinit { close() }
}

/// A stdout longer than the value limit: how long it is, and the file that
/// holds it whole (nil when it fits the stash's window after all, or could
/// not be written — then the attempt has failed anyway).
struct OversizedStdout: Sendable {
    var byteCount: Int
    var file: String?
}
