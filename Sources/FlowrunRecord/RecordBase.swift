#if canImport(Glibc)
import Glibc
#endif

/// The folder run records live in (`.flowrun/runs`, or `--log-dir`), opened
/// under the rules that keep another user from redirecting it (SPEC §11).
/// The record's writer, its readers (`runs`, `show`, `logs`, `resume`) and
/// `.flowrun/state` open it the same way, so what is read is only ever
/// where it would have been written.
///
/// Each folder of the path is opened from the one before, checked to be
/// yours (or root's) and not writable by others without the sticky bit; a
/// link on the way is followed only when it is yours (or root's), as the
/// kernel's `protected_symlinks` does in sticky folders: a `.flowrun -> .`
/// another user planted is refused, not followed.
package enum RecordBase {
    package struct Refusal: Error, CustomStringConvertible {
        package var description: String
        /// A folder of the path is not there (and was not to be made).
        package var isMissing = false
    }

    /// What opening is for, as messages say it.
    package enum Purpose: Sendable {
        case write, read

        var words: String { self == .write ? "refusing to write the run record under" : "refusing to read run records under" }
    }

    /// Opens `path` (`--log-dir`): every folder of it checked from `/`, or,
    /// when relative, from the current directory (which may be anyone's: a
    /// checkout mounted into a container). With `making`, missing folders
    /// are made `0700`.
    package static func open(_ path: String, making: Bool, for purpose: Purpose) throws(Refusal) -> Int32 {
        guard !path.isEmpty else { throw Refusal(description: "the run record needs a folder; --log-dir is empty") }
        let root = path.hasPrefix("/") ? "/" : "."
        let start = Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard start >= 0 else { throw Refusal(description: "cannot open \(root): \(String(cString: strerror(errno)))") }
        let components = path.split(separator: "/").filter { $0 != "." }.map(String.init)
        if root == "/" || components.isEmpty, let problem = trustProblem(of: start, anyOwner: purpose == .read && geteuid() == 0) {
            close(start)
            throw Refusal(description: "\(purpose.words) \(root == "/" ? "/" : path): it \(problem)")
        }
        return try walk(components, from: start, shownAs: root, making: making, flowrunsOwn: false, for: purpose)
    }

    /// Opens `.flowrun/runs` (or `.flowrun` alone, with `components`) in
    /// `folder` (`.` or the folder the upward search found), whoever owns
    /// `folder` itself. These are flowrun's own folders: made `0700`, and one
    /// of yours that lost its owner bits (an older flowrun made `.flowrun`
    /// under umask 0277) gets them back.
    package static func openDefault(in folder: String, components: [String] = [".flowrun", "runs"], making: Bool, for purpose: Purpose) throws(Refusal) -> Int32 {
        let start = Glibc.open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard start >= 0 else { throw Refusal(description: "cannot open \(folder): \(String(cString: strerror(errno)))") }
        return try walk(components, from: start, shownAs: folder, making: making, flowrunsOwn: true, for: purpose)
    }

    /// Opens `components` one by one from `start` (consumed); the last folder's descriptor.
    private static func walk(
        _ components: [String], from start: Int32, shownAs startShown: String, making: Bool, flowrunsOwn: Bool, for purpose: Purpose
    ) throws(Refusal) -> Int32 {
        var current = start
        var shown = startShown
        for (index, component) in components.enumerated() {
            let child = shown == "." ? component : shown == "/" ? "/" + component : shown + "/" + component
            var entry = stat()
            if fstatat(current, component, &entry, AT_SYMLINK_NOFOLLOW) == 0, entry.st_mode & S_IFMT == S_IFLNK,
               entry.st_uid != geteuid(), entry.st_uid != 0 {
                close(current)
                throw Refusal(description: "\(purpose.words) \(child): it is a link of uid \(entry.st_uid), not yours (uid \(geteuid())); another user could redirect the record (remove it, or use --log-dir with a folder of yours)")
            }
            var next = openat(current, component, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            // A folder on the way may be one you may pass through but not list (`0711`).
            if next < 0 && errno == EACCES && index < components.count - 1 {
                next = openat(current, component, openPath | O_DIRECTORY | O_CLOEXEC)
            }
            if next < 0 && errno == ENOENT {
                guard making else {
                    close(current)
                    throw Refusal(description: "\(child) is not there", isMissing: true)
                }
                if mkdirat(current, component, 0o700) != 0 && errno != EEXIST {
                    let reason = String(cString: strerror(errno))
                    close(current)
                    throw Refusal(description: "cannot create \(child): \(reason)")
                }
                // Made just now: never through a link someone slipped in since.
                next = openat(current, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if next >= 0 { forceMode(next, 0o700) }
            }
            let reason = String(cString: strerror(errno))
            close(current)
            guard next >= 0 else { throw Refusal(description: "cannot open \(child): \(reason)") }
            current = next
            shown = child
            if let problem = trustProblem(of: current, anyOwner: purpose == .read && geteuid() == 0) {
                close(current)
                throw Refusal(description: "\(purpose.words) \(child): it \(problem)")
            }
            if flowrunsOwn && making { restoreOwnerBits(current) }
        }
        return current
    }

    /// Linux's `O_PATH` (010000000 on every architecture Swift runs on),
    /// which Glibc's module leaves out without `_GNU_SOURCE`.
    static let openPath: Int32 = 0o10000000

    /// Sets a folder flowrun just made to `mode` if the umask took bits from it.
    static func forceMode(_ folder: Int32, _ mode: mode_t) {
        var info = stat()
        if fstat(folder, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o7777 != mode { fchmod(folder, mode) }
    }

    /// Gives one of flowrun's own folders of yours back `u+rwx`, which it
    /// needs to make anything in it (other bits are left as they are).
    private static func restoreOwnerBits(_ folder: Int32) {
        var info = stat()
        if fstat(folder, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o700 != 0o700 {
            fchmod(folder, (info.st_mode & 0o7777) | 0o700)
        }
    }

    /// Why a folder of the record could be redirected by another user, or
    /// nil if it cannot: it must belong to flowrun's user (or root) and not
    /// be writable by group or others, unless it has the sticky bit (like
    /// /tmp, where no one may rename another's entry) or the group is your
    /// own private one (umask 002). `anyOwner`: root
    /// reading another user's records, which count as that user's (`RunHistory.owner`).
    package static func trustProblem(of folder: Int32, anyOwner: Bool = false) -> String? {
        var info = stat()
        guard fstat(folder, &info) == 0 else { return "cannot be checked: \(String(cString: strerror(errno)))" }
        let me = geteuid()
        if info.st_uid != me && info.st_uid != 0 && !anyOwner {
            return "belongs to uid \(info.st_uid), not to you (uid \(me)); another user could redirect the record (use --log-dir with a folder of yours)"
        }
        // Your own private group is you (`OtherWriters`, the lookup's rule); root's group never is.
        if let writers = OtherWriters.of(mode: info.st_mode, group: info.st_gid, sticky: info.st_mode & S_ISVTX != 0, me: me) {
            let mode = String(info.st_mode & 0o7777, radix: 8)
            return "is writable by \(writers) (mode 0\(mode)) without the sticky bit; another user could redirect the record (chmod go-w it, or use --log-dir with a folder of yours)"
        }
        return nil
    }
}
