#if canImport(Glibc)
import Glibc
#endif

/// Where the first word of a command flowrun execs itself (`DirectCommand`)
/// is found in a task's PATH: the first folder in which it is executable,
/// as sh finds it. Searching costs a path lookup per folder (9 for `true`
/// in the benchmark's PATH: some 10 µs of flowrun's CPU a task here, 7 %
/// of it at max_parallel 2), so each answer is kept, as long
/// as nothing could have changed it: every folder searched, and every
/// folder above it, is watched (inotify), and any entry made, removed,
/// renamed or chmod'ed in one of them forgets every answer. A kept answer
/// costs one `read` of the watch, which sees every change made before it
/// (a task that installs a command into an earlier folder of the PATH, then
/// ends: the next task finds the new one, as under sh).
///
/// Not kept: an answer from a relative folder (or an empty PATH entry),
/// or one whose folders cannot all be watched (no inotify, out of watches).
/// Not seen: a mount over a folder, and a change above the target of a
/// symlinked folder; an exec that then fails still falls back to the shell.
/// On the engine's queue only.
final class CommandPaths {
    private struct Key: Hashable {
        var searchPath: String
        var name: String
    }

    /// Answers kept, each with every folder it depends on watched.
    private var known: [Key: String] = [:]
    /// The inotify descriptor; -1 when answers cannot be kept.
    private var watch: Int32
    /// Folders watched, by path, and the paths of each watch (a symlinked
    /// folder and its target share one), to forget a watch the kernel drops.
    private var watched: Set<String> = []
    private var watchedPaths: [Int32: [String]] = [:]
    /// Where the watch's events are read: allocated once, looked at per spawn.
    private let events = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: MemoryLayout<inotify_event>.alignment)

    private static let changes = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

    init() {
        watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    }

    deinit {
        if watch >= 0 { close(watch) }
        events.deallocate()
    }

    /// The path to exec for `name` (itself if it holds a `/`), or nil if no
    /// folder of `searchPath` has it executable.
    func path(of name: String, in searchPath: String) -> String? {
        if name.utf8.contains(UInt8(ascii: "/")) { return name }
        forgetIfChanged()
        let key = Key(searchPath: searchPath, name: name)
        if let path = known[key] { return path }
        var keepable = watch >= 0
        // Each entry in turn, an empty one meaning the current folder; a
        // trailing `:` adds none (as flowrun's spawn has always searched).
        var entries = searchPath.split(separator: ":", omittingEmptySubsequences: false)
        if entries.last?.isEmpty == true { entries.removeLast() }
        for entry in entries {
            let folder = entry.isEmpty ? "." : String(entry)
            // Watched before it is searched: a change after the search is seen.
            if keepable { keepable = folder.hasPrefix("/") && watchWithParents(folder) }
            let candidate = folder + "/" + name
            if access(candidate, X_OK) == 0 {
                if keepable { known[key] = candidate }
                return candidate
            }
        }
        return nil
    }

    /// Watches `folder` and the folders above it that are not watched yet.
    /// A folder that does not exist is not watched: its making shows in the
    /// folder above. False if one that exists cannot be watched.
    private func watchWithParents(_ folder: String) -> Bool {
        var path = "/"
        var below = folder.split(separator: "/")[...]
        while true {
            if !watched.contains(path) {
                let descriptor = inotify_add_watch(watch, path, Self.changes)
                guard descriptor >= 0 else { return errno == ENOENT || errno == ENOTDIR }
                watched.insert(path)
                watchedPaths[descriptor, default: []].append(path)
            }
            guard let next = below.popFirst() else { return true }
            path = (path == "/" ? "/" : path + "/") + next
        }
    }

    /// Forgets every answer if a watched folder changed since the last look.
    private func forgetIfChanged() {
        guard watch >= 0 else { return }
        var changed = false
        var overflowed = false
        while true {
            let count = read(watch, events.baseAddress, events.count)
            guard count > 0 else { break }
            changed = true
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = events.load(fromByteOffset: offset, as: inotify_event.self)
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { overflowed = true }
                if event.mask & UInt32(IN_IGNORED) != 0, let paths = watchedPaths.removeValue(forKey: event.wd) {
                    watched.subtract(paths)
                }
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
        guard changed else { return }
        known.removeAll()
        if overflowed {
            // Events were lost, dropped watches among them: start over.
            close(watch)
            watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            watched.removeAll()
            watchedPaths.removeAll()
        }
    }
}
