#if canImport(Glibc)
import Glibc
#endif

/// A task's log file (`logs/TASK.log`), created when the first byte is
/// written to it: a task that prints nothing costs no file. Creating a file
/// is the largest kernel cost of a short task after its spawn (17–56 µs on
/// ext4 here, against ~2 µs for the pipe that brings stderr to flowrun).
/// Opened for appending, so every attempt of a task shares it.
///
/// Not thread-safe: the pump's thread writes while the task's output flows,
/// the engine's queue after it has ended.
final class TaskLog: @unchecked Sendable {
    let path: String
    private var descriptor: Int32 = -1
    /// Why output could not be written (the file could not be created, the
    /// disk is full), the first time it happened; the attempt fails with it.
    private(set) var problem: String?

    init(path: String) {
        self.path = path
    }

    /// Whether the file was opened for writing (so it exists), closed since or not.
    private(set) var exists = false

    func write(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, openIfNeeded() else { return }
        if !writeAll(descriptor, bytes), problem == nil {
            problem = "cannot write \(path): \(String(cString: strerror(errno)))"
        }
    }

    func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    private func openIfNeeded() -> Bool {
        if descriptor >= 0 { return true }
        guard problem == nil else { return false }
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            problem = "cannot create \(path): \(String(cString: strerror(errno)))"
            return false
        }
        exists = true
        return true
    }
}
