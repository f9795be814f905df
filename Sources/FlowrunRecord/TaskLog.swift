#if canImport(Glibc)
import Glibc
#endif

/// A task's log file (`logs/000/000042-NAME.log`), created when the first byte
/// is written to it: a task that prints nothing costs no file. Creating a
/// file is the largest kernel cost of a short task after its spawn (17–56 µs
/// on ext4 here, against ~2 µs for the pipe that brings stderr to flowrun).
/// Every attempt of a task appends to the same file: the first one to print
/// makes it (`O_EXCL`, `0600`), later ones reopen the file this run made.
/// Both relative to the held `logs/` folder and its shard (made with the
/// first log in it), never through a link.
///
/// Not thread-safe: the pump's thread (or the HTTP thread) writes while the
/// task's output flows, the engine's queue after it has ended.
package final class TaskLog: @unchecked Sendable {
    /// The log as the user finds it, for messages.
    let path: String
    private let folder: RunFolder
    private let fileName: String
    /// The folder of `logs/` it goes in (`RecordFileName.shard`).
    private let shard: String
    /// Whether an earlier attempt made the file.
    private let madeBefore: Bool
    private var descriptor: Int32 = -1
    /// Why output could not be written (the file could not be created, the
    /// disk is full), the first time it happened; the attempt fails with it,
    /// and so does the run.
    package private(set) var problem: String?

    init(folder: RunFolder, shard: String, fileName: String, path: String, exists: Bool) {
        self.folder = folder
        self.shard = shard
        self.fileName = fileName
        self.path = path
        madeBefore = exists
    }

    /// Whether the file was opened for writing (so it exists), closed since or not.
    package private(set) var exists = false

    package func write(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, openIfNeeded() else { return }
        if !writeAll(descriptor, bytes), problem == nil {
            fail("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    package func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    package func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    private func openIfNeeded() -> Bool {
        if descriptor >= 0 { return true }
        guard problem == nil else { return false }
        let (opened, reason) = folder.inLogsShard(shard, make: true) { [fileName, madeBefore] logs in
            guard logs >= 0 else { return -1 }
            return madeBefore
                ? folder.reopenForAppending(fileName, in: logs)
                : folder.create(fileName, in: logs, appending: true)
        }
        descriptor = opened
        guard descriptor >= 0 else {
            fail("cannot create \(path): \(String(cString: strerror(reason)))")
            return false
        }
        exists = true
        return true
    }

    private func fail(_ description: String) {
        problem = description
        folder.noteFailure(description)
    }
}
