import Glibc
import Synchronization

/// `flowrun watch`'s ears: one inotify instance (`inotify_init1`,
/// `inotify_add_watch`) over every folder a `sources:` glob can match,
/// read on the event loop's thread — no thread of its own, no polling.
/// A file counts as changed once written and closed (`IN_CLOSE_WRITE`),
/// moved in or out, or deleted; a folder made under a recursive root is
/// watched at once, and the files already in it count as changed (they
/// may have been written before its watch existed).
final class SourceWatcher: Sendable {
    /// What went wrong setting a watch up, said with the limit to raise.
    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    private struct State {
        /// Watch descriptor → each path it is watched as (as the roots spell them) and whether folders
        /// under it are watched too. One folder may be reached by several paths (`src` and `./src`, a
        /// root and an absolute spelling of it, a link to it): the kernel gives them one descriptor,
        /// and an event under it is a change under each of them.
        var folders: [Int32: [(path: String, recursive: Bool)]] = [:]
        /// Folder path → its watch descriptor.
        var watched: [String: Int32] = [:]
        /// A watch that could not be added after the start (a new folder): reported once.
        var lateProblem: Problem?
        /// Roots that were removed (`rm -rf src`), with whether they were
        /// recursive: no watch of theirs would see them made again, so their
        /// nearest folder that exists is watched for them to come back.
        var awaited: [String: Bool] = [:]
    }

    let descriptor: Int32
    private let state = Mutex(State())
    /// Folders never watched nor walked: the record, `.flowrun/`.
    private let skip: @Sendable (String) -> Bool

    static let mask: UInt32 = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF)

    init(skip: @escaping @Sendable (String) -> Bool) throws(Problem) {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else {
            let error = errno
            if error == EMFILE {
                throw Problem(description: "cannot watch files: the inotify instance limit is reached; raise it with sysctl fs.inotify.max_user_instances=1024 (now \(Self.sysctl("max_user_instances")))")
            }
            throw Problem(description: "cannot watch files: inotify_init1: \(String(cString: strerror(error)))")
        }
        self.descriptor = descriptor
        self.skip = skip
    }

    deinit { close(descriptor) }

    /// Watches `folder` (and, if `recursive`, every folder under it but
    /// hidden ones and those `skip` names). Returns how many watches it added.
    @discardableResult
    func add(_ folder: String, recursive: Bool) throws(Problem) -> Int {
        var added = 0
        var pending = [folder]
        while let next = pending.popLast() {
            let path = next.isEmpty ? "." : next
            guard !skip(next) else { continue }
            // Watched already: made recursive if asked (two globs may share a folder), else nothing to do.
            let known: Bool = state.withLock { state in
                guard let watch = state.watched[next] else { return false }
                if recursive, let alias = state.folders[watch]?.firstIndex(where: { $0.path == next }), state.folders[watch]?[alias].recursive == false {
                    state.folders[watch]?[alias].recursive = true
                    pending += Self.subfolders(of: next)
                }
                return true
            }
            guard !known else { continue }
            let watch = inotify_add_watch(descriptor, path, Self.mask | UInt32(IN_ONLYDIR))
            guard watch >= 0 else {
                let error = errno
                if error == ENOSPC {
                    throw Problem(description: "cannot watch \(path): the inotify watch limit is reached; raise it with sysctl fs.inotify.max_user_watches=524288 (now \(Self.sysctl("max_user_watches")); in a container, user.max_inotify_watches)")
                }
                if error == ENOENT || error == ENOTDIR { continue }  // gone already, or not a folder
                throw Problem(description: "cannot watch \(path): \(String(cString: strerror(error)))")
            }
            // A folder watched already under another path (same descriptor): one more name for it. Its
            // folders are walked again only if no name of it was walked yet (a bind mount's loop ends).
            let (fresh, walked): (Bool, Bool) = state.withLock { state in
                let aliases = state.folders[watch] ?? []
                state.folders[watch] = aliases + [(next, recursive)]
                state.watched[next] = watch
                return (aliases.isEmpty, aliases.contains { $0.recursive })
            }
            if fresh { added += 1 }
            if recursive, !walked {
                let (folders, links) = Self.subfoldersAndLinks(of: next)
                pending += folders
                // A link to a folder where a wildcard folder can match it (`src/*/*.c`, `src/x` → `../real/x`):
                // its folder is watched under the link's name, alone (a glob's `**` does not follow links).
                links.forEach(addLink)
            }
        }
        return added
    }

    /// Watches the folder a link under a recursive folder points to, under the link's path, alone.
    private func addLink(_ link: String) {
        guard !skip(link), state.withLock({ $0.watched[link] == nil }) else { return }
        // A link another user made (in a shared folder like /tmp) is not followed: it could point the
        // watch at this user's own files (the record: a run there would start the next, without end).
        var info = stat()
        guard lstat(link, &info) == 0, info.st_uid == geteuid() || info.st_uid == 0 else { return }
        let watch = inotify_add_watch(descriptor, link, Self.mask | UInt32(IN_ONLYDIR))
        if watch < 0 {
            if errno == ENOSPC { state.withLock { $0.lateProblem = Self.limitProblem(link) } }
            return
        }
        state.withLock { state in
            state.folders[watch, default: []].append((link, false))
            state.watched[link] = watch
        }
    }

    /// Starts watching for a root that does not exist yet: its nearest folder
    /// that exists is watched alone until the root is made, then the root as asked.
    func await(_ root: String, recursive: Bool) {
        var changed: [String] = []
        waitForRoot(root, recursive: recursive, into: &changed)
    }

    private static func limitProblem(_ path: String) -> Problem {
        Problem(description: "cannot watch \(path): the inotify watch limit is reached; raise it with sysctl fs.inotify.max_user_watches=524288 (now \(Self.sysctl("max_user_watches")); in a container, user.max_inotify_watches)")
    }

    /// On the loop's thread: reads every pending event; returns the paths that changed.
    func drain() -> [String] {
        var changed: [String] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let (watch, mask, length, name) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int, String) in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let start = offset + MemoryLayout<inotify_event>.size
                    let bytes = raw[start..<(start + Int(event.len))].prefix { $0 != 0 }
                    return (event.wd, event.mask, Int(event.len), String(decoding: bytes, as: UTF8.self))
                }
                offset += MemoryLayout<inotify_event>.size + length
                handle(watch: watch, mask: mask, name: name, into: &changed)
            }
        }
        return changed
    }

    /// A watch that could not be added for a folder made after the start.
    func takeLateProblem() -> Problem? {
        state.withLock { state in
            defer { state.lateProblem = nil }
            return state.lateProblem
        }
    }

    private func handle(watch: Int32, mask: UInt32, name: String, into changed: inout [String]) {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            changed.append("")  // events were lost: everything counts as changed
            return
        }
        guard let aliases = state.withLock({ $0.folders[watch] }) else { return }
        if mask & UInt32(IN_IGNORED) != 0 || mask & UInt32(IN_DELETE_SELF) != 0 {
            let roots: [(path: String, recursive: Bool)] = state.withLock { state in
                guard let aliases = state.folders[watch] else { return [] }
                state.folders[watch] = nil
                for folder in aliases where state.watched[folder.path] == watch { state.watched[folder.path] = nil }
                return aliases.filter { folder in
                    state.watched[Self.parent(of: folder.path)].flatMap { state.folders[$0]?.contains { $0.recursive } } != true
                }
            }
            // A root removed: nothing else would see it made again (then a write in it would be missed).
            for folder in roots where !folder.path.isEmpty && folder.path != "/" { waitForRoot(folder.path, recursive: folder.recursive, into: &changed) }
            return
        }
        for folder in aliases { handle(folder: folder, mask: mask, name: name, into: &changed) }
    }

    private func handle(folder: (path: String, recursive: Bool), mask: UInt32, name: String, into changed: inout [String]) {
        if mask & UInt32(IN_MOVE_SELF) != 0 {
            // A root renamed away (`mv src src.old`): its watch went with it. (A folder whose
            // parent is watched is the parent's IN_MOVED_FROM's.)
            let parentWatched = state.withLock { state in state.watched[Self.parent(of: folder.path)].flatMap { state.folders[$0]?.contains { $0.recursive } } == true }
            if !parentWatched, !folder.path.isEmpty, folder.path != "/" {
                forget(folder.path)
                changed.append(folder.path + "/")
                waitForRoot(folder.path, recursive: folder.recursive, into: &changed)
            }
            return
        }
        let path = folder.path.isEmpty ? name : (folder.path.hasSuffix("/") ? folder.path + name : folder.path + "/" + name)
        guard !skip(path) else { return }
        if mask & UInt32(IN_ISDIR) != 0, mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
            let awaited: (path: String, recursive: Bool)? = state.withLock { state in
                state.awaited.first { $0.key == path || $0.key.hasPrefix(path + "/") }.map { ($0.key, $0.value) }
            }
            if let awaited { return waitForRoot(awaited.path, recursive: awaited.recursive, into: &changed) }
        }
        if mask & UInt32(IN_ISDIR) != 0, mask & UInt32(IN_MOVED_FROM) != 0 {
            // A folder moved away (out of the tree, or renamed): its watch follows
            // it, so it no longer watches this path — forgotten, or a folder made
            // under the old name would be taken as watched and never be, and
            // events from where it went would be read as this path's. What
            // was in it is gone from here: `path/` stands for all of it.
            let wasRoot = forget(path)
            changed.append(path + "/")
            // Under a folder watched alone, a folder watched was a root (or on the way to one).
            if !folder.recursive, let recursive = wasRoot { waitForRoot(path, recursive: recursive, into: &changed) }
            return
        }
        if mask & UInt32(IN_ISDIR) != 0 {
            // A new folder (made, or moved in) under a recursive root: watch it, and count what is in it already.
            guard folder.recursive, mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0, !name.hasPrefix(".") else { return }
            do throws(Problem) {
                try add(path, recursive: true)
            } catch {
                state.withLock { $0.lateProblem = error }
            }
            changed += Self.files(under: path)
            return
        }
        // A link to a folder made (or moved in) under a recursive folder: watched under its name, and what is there counts.
        if folder.recursive, mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0, !name.hasPrefix("."), Self.isLink(path), Self.isFolder(path) {
            addLink(path)
            changed += Self.files(under: path)
            return
        }
        // A link watched as its folder, removed or moved away: no longer watched under that name.
        if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0, state.withLock({ $0.watched[path] != nil }) {
            forget(path)
            changed.append(path + "/")
            return
        }
        // A file created is read once written and closed (IN_CLOSE_WRITE follows).
        if mask & UInt32(IN_CREATE) != 0 { return }
        changed.append(path)
    }

    /// `root` was removed: if it exists again, it is watched as before and
    /// what is in it counts as changed; else its nearest folder that exists
    /// is watched (alone) until it is made again.
    private func waitForRoot(_ root: String, recursive: Bool, into changed: inout [String]) {
        if Self.isFolder(root) {
            _ = state.withLock { $0.awaited.removeValue(forKey: root) }
            do throws(Problem) {
                try add(root, recursive: recursive)
            } catch {
                state.withLock { $0.lateProblem = error }
            }
            changed += Self.files(under: root)
            return
        }
        state.withLock { $0.awaited[root] = recursive }
        var lookout = Self.parent(of: root)
        while !lookout.isEmpty, lookout != "/", !Self.isFolder(lookout) { lookout = Self.parent(of: lookout) }
        let known = state.withLock { $0.watched[lookout] != nil }
        if !known {
            let watch = inotify_add_watch(descriptor, lookout.isEmpty ? "." : lookout, Self.mask | UInt32(IN_ONLYDIR))
            if watch >= 0 {
                state.withLock { state in
                    state.folders[watch, default: []].append((lookout, false))
                    state.watched[lookout] = watch
                }
            } else if errno == ENOSPC {
                state.withLock { $0.lateProblem = Self.limitProblem(lookout.isEmpty ? "." : lookout) }
            }
        }
        // Made again between its removal and this watch: follow it down.
        let rest = lookout.isEmpty ? Substring(root) : root.dropFirst(lookout == "/" ? 1 : lookout.count + 1)
        if let first = rest.split(separator: "/").first {
            let next = lookout.isEmpty ? String(first) : (lookout == "/" ? "/" : lookout + "/") + first
            if Self.isFolder(next) { waitForRoot(root, recursive: recursive, into: &changed) }
        }
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path.isEmpty ? "." : path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// Stops watching `folder` and every folder under it (as the watches spell them).
    /// Returns whether `folder` itself was watched recursively, nil if it was not watched.
    @discardableResult
    private func forget(_ folder: String) -> Bool? {
        let recursive = state.withLock { state in state.watched[folder].flatMap { state.folders[$0]?.first { $0.path == folder }?.recursive } }
        let gone: [Int32] = state.withLock { state in
            let paths = state.watched.keys.filter { $0 == folder || $0.hasPrefix(folder + "/") }
            return paths.compactMap { path in
                guard let watch = state.watched.removeValue(forKey: path) else { return nil }
                // Its other names (`./src` for `src`) keep the descriptor.
                let rest = (state.folders[watch] ?? []).filter { $0.path != path }
                state.folders[watch] = rest.isEmpty ? nil : rest
                return rest.isEmpty ? watch : nil
            }
        }
        for watch in gone { inotify_rm_watch(descriptor, watch) }
        return recursive
    }

    private static func subfolders(of folder: String) -> [String] {
        entries(of: folder).filter { $0.isFolder && !$0.name.hasPrefix(".") }.map { folder.isEmpty ? $0.name : folder + "/" + $0.name }
    }

    /// The folders in `folder` (not hidden), and the links there (not hidden) that point to a folder.
    private static func subfoldersAndLinks(of folder: String) -> (folders: [String], links: [String]) {
        var folders: [String] = []
        var links: [String] = []
        for entry in entries(of: folder) where !entry.name.hasPrefix(".") {
            let path = folder.isEmpty ? entry.name : folder + "/" + entry.name
            if entry.isFolder { folders.append(path) } else if entry.isLink, isFolder(path) { links.append(path) }
        }
        return (folders, links)
    }

    private static func isLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }

    private static func files(under folder: String) -> [String] {
        var result: [String] = []
        for entry in entries(of: folder) {
            let path = folder + "/" + entry.name
            if entry.isFolder {
                if !entry.name.hasPrefix(".") { result += files(under: path) }
            } else {
                result.append(path)
            }
        }
        return result
    }

    private static func entries(of folder: String) -> [(name: String, isFolder: Bool, isLink: Bool)] {
        guard let handle = opendir(folder.isEmpty ? "." : folder) else { return [] }
        defer { closedir(handle) }
        var result: [(String, Bool, Bool)] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name != ".", name != ".." else { continue }
            var isFolder = entry.pointee.d_type == UInt8(DT_DIR)
            var isLink = entry.pointee.d_type == UInt8(DT_LNK)
            if entry.pointee.d_type == UInt8(DT_UNKNOWN) {
                var info = stat()
                let known = lstat((folder.isEmpty ? "" : folder + "/") + name, &info) == 0
                isFolder = known && info.st_mode & S_IFMT == S_IFDIR
                isLink = known && info.st_mode & S_IFMT == S_IFLNK
            }
            result.append((name, isFolder, isLink))
        }
        return result
    }

    /// `/proc/sys/fs/inotify/NAME`, for the message.
    private static func sysctl(_ name: String) -> String {
        guard let file = fopen("/proc/sys/fs/inotify/" + name, "r") else { return "unknown" }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 32)
        guard fgets(&line, 32, file) != nil else { return "unknown" }
        return String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
