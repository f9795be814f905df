#if canImport(Glibc)
import Glibc
#endif

/// Which `$FLOWRUN_OUTPUT` files may exist, known without looking: the
/// run's `outputs/` folder is watched (inotify) from before its first task
/// starts, and the names of the entries made in it (created, linked or
/// renamed in) are noted. An attempt that ends looks for its file only if
/// that name was made; most tasks write no outputs, and a look that finds
/// nothing costs a lookup of a name never seen (plus the folder's open and
/// close), some 7 µs of flowrun's CPU a task here. A task's processes are
/// gone before its attempt ends, so whatever they made is already noted.
///
/// Should the folder be removed or renamed (a task replaced `outputs/`),
/// events be lost, or too many names be made that no attempt reads, the
/// watch ends and every attempt looks, as without it. On the engine's queue only.
final class OutputFilesWatch {
    /// The inotify descriptor; -1 once the watch has ended (every name may exist).
    private var watch: Int32
    /// Names made in the folder and not yet asked about.
    private var made: Set<String> = []
    /// Where events are read: allocated once, looked at per attempt.
    private let events = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: MemoryLayout<inotify_event>.alignment)
    /// More names than this, made and never asked about: the watch ends.
    private static let madeLimit = 4096

    /// Watches `folder` (a path to the run's `outputs/`).
    init(folder: String) {
        watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        let changes = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
        if watch >= 0, inotify_add_watch(watch, folder, changes) < 0 { end() }
    }

    deinit {
        end()
        events.deallocate()
    }

    /// Whether an entry named `name` may be in the folder: false only if
    /// none was made since the watch began. Asked once per name.
    func mayHold(_ name: String) -> Bool {
        readEvents()
        guard watch >= 0 else { return true }
        return made.remove(name) != nil
    }

    private func readEvents() {
        while watch >= 0 {
            let count = read(watch, events.baseAddress, events.count)
            guard count > 0 else { return }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = events.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + MemoryLayout<inotify_event>.size
                offset = nameStart + Int(event.len)
                // Anything but a name made (the folder gone or moved, the watch dropped, events lost): stop trusting it.
                guard event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0, event.len > 0 else { return end() }
                made.insert(String(cString: events.baseAddress!.advanced(by: nameStart).assumingMemoryBound(to: CChar.self)))
                if made.count > Self.madeLimit { return end() }
            }
        }
    }

    private func end() {
        if watch >= 0 { close(watch) }
        watch = -1
        made = []
    }
}
