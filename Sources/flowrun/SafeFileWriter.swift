#if canImport(Glibc)
import Glibc
#endif

/// Every file flowrun writes at a path the user named (`show --trace`,
/// `--timeline`, `export -o`), whole or not at all, and never through
/// something another user planted in a shared folder (SECURITY.md).
///
/// A plain file (new or existing) is written the way `mkstemp` and a rename
/// do it: a temporary file with a random name beside it, made with
/// `O_CREAT|O_EXCL|O_NOFOLLOW` (a name someone planted is skipped, a link
/// never followed), mode `0666` less the umask as any new file, written in
/// full, `fsync`ed, then renamed over the path. The rename replaces a link
/// at the path, never what it points to, and fails on another user's file
/// in a sticky folder. Two things are written where they are instead, the
/// way `>` would: a device, pipe or socket that is yours or root's
/// (`/dev/null`, a FIFO), and what a link of yours or root's leads to
/// (`/dev/stdout`; a link to a plain file has that file replaced).
enum SafeFileWriter {
    /// "cannot write PATH: REASON": what the command prints before exiting 1.
    struct Failure: Error, CustomStringConvertible {
        let path: String
        let reason: String

        init(_ path: String, errno code: Int32) {
            self.init(path, reason: String(cString: strerror(code)))
        }

        init(_ path: String, reason: String) {
            self.path = path
            self.reason = reason
        }

        var description: String { "cannot write \(path): \(reason)" }
    }

    static func write(_ text: String, to path: String) throws(Failure) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            // Nothing there yet (or a folder on the way is missing: the temporary file says so).
            try replace(path, shownAs: path, with: text)
            return
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            try replace(path, shownAs: path, with: text)
        case S_IFDIR:
            throw Failure(path, errno: EISDIR)
        case S_IFLNK where isYoursOrRoots(info.st_uid):
            var target = stat()
            if stat(path, &target) != 0 {
                // A link to nothing: the file takes the link's place.
                try replace(path, shownAs: path, with: text)
            } else if target.st_mode & S_IFMT == S_IFREG {
                try replace(resolved(path), shownAs: path, with: text)
            } else {
                try writeInPlace(path, following: true, text: text)
            }
        case S_IFLNK:
            // Someone else's link is replaced, never followed (in a sticky folder the rename fails).
            try replace(path, shownAs: path, with: text)
        default:
            guard isYoursOrRoots(info.st_uid) else {
                throw Failure(path, reason: "it belongs to \(WorkflowTrust.user(info.st_uid)), not to you; name a file of yours")
            }
            try writeInPlace(path, following: false, text: text)
        }
    }

    /// The temporary file, written and renamed over `path`.
    private static func replace(_ path: String, shownAs shown: String, with text: String) throws(Failure) {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !name.isEmpty else { throw Failure(shown, errno: EISDIR) }
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folderDescriptor >= 0 else { throw Failure(shown, errno: errno) }
        defer { close(folderDescriptor) }
        var temporary = ""
        var descriptor: Int32 = -1
        // 64 random bits a name: a planted name is a collision, and the next one is made.
        for _ in 0..<16 where descriptor < 0 {
            temporary = "." + temporaryStem(name) + ".tmp-" + String(UInt64.random(in: .min ... .max), radix: 16)
            descriptor = openat(folderDescriptor, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
            if descriptor < 0, errno != EEXIST { throw Failure(shown, errno: errno) }
        }
        guard descriptor >= 0 else { throw Failure(shown, errno: EEXIST) }
        var failure = writeAll(text, to: descriptor)
        if failure == 0, fsync(descriptor) != 0 { failure = errno }
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure == 0, renameat(folderDescriptor, temporary, folderDescriptor, name) != 0 { failure = errno }
        if failure != 0 {
            unlinkat(folderDescriptor, temporary, 0)
            throw Failure(shown, errno: failure)
        }
    }

    /// The start of `name` in the temporary's name: at most 64 bytes, cut
    /// on a character's edge, so with the dot and `.tmp-` and 16 hex digits
    /// it stays far below NAME_MAX (255 bytes) whatever the script.
    static func temporaryStem(_ name: String) -> Substring {
        var bytes = 0
        var end = name.startIndex
        for index in name.indices {
            let next = name.index(after: index)
            bytes += name.utf8.distance(from: index, to: next)
            guard bytes <= 64 else { break }
            end = next
        }
        return name[..<end]
    }

    /// A device, pipe or socket, written as `>` would (no temporary file to rename over it).
    private static func writeInPlace(_ path: String, following: Bool, text: String) throws(Failure) {
        let descriptor = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (following ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else { throw Failure(path, errno: errno) }
        var info = stat()
        // Swapped for a plain file, or for someone else's, since it was looked at: not written.
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT != S_IFREG, isYoursOrRoots(info.st_uid) else {
            close(descriptor)
            throw Failure(path, reason: "it changed while flowrun opened it")
        }
        var failure = writeAll(text, to: descriptor)
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure != 0 { throw Failure(path, errno: failure) }
    }

    /// 0, or the errno of the write that failed.
    private static func writeAll(_ text: String, to descriptor: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0, errno == EINTR { continue }
                if written < 0 { return errno }
                if written == 0 { return EIO }
                offset += written
            }
            return 0
        }
    }

    private static func isYoursOrRoots(_ owner: uid_t) -> Bool { owner == geteuid() || owner == 0 }

    private static func resolved(_ path: String) -> String { WorkflowTrust.resolved(path) }
}
