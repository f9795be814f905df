#if canImport(Glibc)
import Glibc
#endif

/// Which `$FLOWRUN_OUTPUT` files tasks have created in the run's `outputs/`
/// folder, heard from inotify, so that an attempt that wrote no outputs (most
/// of them) costs no `open`. Looking up a name that does not exist is a
/// directory search on ext4 (~5 µs here, each name being new); reading an
/// empty inotify queue is ~0.5 µs.
///
/// A file is created by the task's own processes, all of which have exited
/// before the attempt is over, and inotify queues the event inside the
/// creating call: by the time an attempt's outputs are read, its event has
/// been queued. Without inotify (no instance left, a full queue, the folder
/// removed or moved away by a task), every attempt looks, as before.
///
/// Used on the engine's queue only.
final class OutputFilesWatch {
    private var descriptor: Int32
    private var watch: Int32 = -1
    /// Names created so far (kept: two task names may share a file name).
    private var created: Set<String> = []
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)

    init(directory: String) {
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return }
        // Created, or moved in (a task that writes elsewhere and renames);
        // and the folder itself going away.
        let events = IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
        watch = inotify_add_watch(descriptor, directory, UInt32(events))
        if watch < 0 { stopWatching() }
    }

    deinit { stopWatching() }

    /// False only when `name` certainly does not exist in the folder.
    func mayExist(_ name: String) -> Bool {
        guard descriptor >= 0 else { return true }
        readEvents()
        guard descriptor >= 0 else { return true }
        return created.contains(name)
    }

    private func readEvents() {
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else {
                if count < 0 && errno == EINTR { continue }
                return  // EAGAIN: nothing queued
            }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= count {
                let (mask, length) = buffer.withUnsafeBytes { bytes in
                    let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.mask, Int(event.len))
                }
                if mask & UInt32(IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                    // Events were dropped, or the folder watched is no longer
                    // `outputs/`: from now on, look every time.
                    stopWatching()
                    return
                }
                // The name is NUL-padded to `len` bytes.
                let name = buffer[(offset + header)..<(offset + header + length)].prefix { $0 != 0 }
                created.insert(String(decoding: name, as: UTF8.self))
                offset += header + length
            }
        }
    }

    /// Removes the watch before closing: closing an instance that still has
    /// one waits for an RCU grace period (7–16 ms here, most of the time),
    /// which would be time added to every run's end; removing it first hands
    /// that wait to a kernel worker.
    private func stopWatching() {
        if descriptor >= 0 {
            if watch >= 0 { inotify_rm_watch(descriptor, watch) }
            close(descriptor)
        }
        descriptor = -1
        watch = -1
        created = []
    }
}
