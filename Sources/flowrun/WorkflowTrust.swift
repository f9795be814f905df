import FlowrunRecord
import FlowrunLoading
#if canImport(Glibc)
import Glibc
#endif

/// Whether a workflow file the lookup found may run (SPEC §11), as git's
/// `safe.directory` decides for a repository: a `flowrun.yaml` is code, and
/// one found in a parent folder may have been planted there by another
/// user (`/tmp/x/flowrun.yaml` above `/tmp/x/victim/project`).
///
/// Trusted: the file (and a link naming it) belongs to you or root and
/// only you can write it; the folder it lies in (and, for a link, the
/// folder of the file it leads to) belongs to you or root and nobody else
/// may write it, unless it has the sticky bit. Root trusts only root's.
/// Group-writable is nobody else only for your own user private group
/// (`OtherWriters`: named after you, your primary one, no other member and
/// no other account's primary group; what Debian's umask 002 gives). A
/// folder listed in `FLOWRUN_TRUSTED_DIRS` (`:`-separated absolute paths,
/// or `*` for every folder) is trusted as it is. An explicit FILE never
/// comes here: naming it is trusting it. The same check decides for a bare
/// word taken as FILE (`RunArguments`) and for `resume`'s workflow file.
struct WorkflowTrust {
    static let variable = "FLOWRUN_TRUSTED_DIRS"

    let me: uid_t
    /// `FLOWRUN_TRUSTED_DIRS`'s folders, resolved (`realpath`).
    let trustedFolders: Set<String>
    let trustsEveryFolder: Bool

    static func fromEnvironment() -> WorkflowTrust {
        let listed = getenv(variable).map { String(cString: $0) } ?? ""
        let entries = listed.split(separator: ":").map(String.init)
        return WorkflowTrust(me: geteuid(),
                             trustedFolders: Set(entries.filter { $0.hasPrefix("/") }.map(resolved)),
                             trustsEveryFolder: entries.contains("*"))
    }

    /// Opens `folder` and checks `name` in it; the open folder when trusted
    /// (the caller moves into it with `fchdir`, so the folder checked is the
    /// folder entered), else why not, as a clause: "it belongs to user …".
    func open(folder: String, name: String) -> Result<Int32, Refusal> {
        let descriptor = Glibc.open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(Refusal("cannot open its folder \(folder): \(String(cString: strerror(errno)))", isUntrusted: false)) }
        if trustsEveryFolder || trustedFolders.contains(Self.resolved(folder)) { return .success(descriptor) }
        if let problem = problem(in: descriptor, folder: folder, name: name) {
            close(descriptor)
            return .failure(problem)
        }
        return .success(descriptor)
    }

    /// Checks the file at `path` (absolute, or from the current folder) as
    /// `open` does: nil when trusted, else why not.
    func refusal(forFileAt path: String) -> Refusal? {
        let (folder, name) = Self.folderAndName(path)
        switch open(folder: folder, name: name) {
        case .success(let descriptor):
            close(descriptor)
            return nil
        case .failure(let refusal):
            return refusal
        }
    }

    /// `path`'s folder, made absolute, and its last name.
    static func folderAndName(_ path: String) -> (folder: String, name: String) {
        let absolute = WorkflowFileLookup.absolute(path)
        guard let slash = absolute.lastIndex(of: "/") else { return (".", absolute) }
        return (slash == absolute.startIndex ? "/" : String(absolute[..<slash]), String(absolute[absolute.index(after: slash)...]))
    }

    struct Refusal: Error, CustomStringConvertible {
        let description: String
        /// False when the file or its folder could not even be looked at (EACCES…).
        let isUntrusted: Bool
        init(_ description: String, isUntrusted: Bool = true) {
            self.description = description
            self.isUntrusted = isUntrusted
        }
    }

    private func problem(in descriptor: Int32, folder: String, name: String) -> Refusal? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return Refusal("cannot read its folder \(folder): \(String(cString: strerror(errno)))", isUntrusted: false) }
        if let why = folderProblem(info) { return Refusal("its folder \(folder) \(why)") }
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return Refusal("cannot read it: \(String(cString: strerror(errno)))", isUntrusted: false) }
        let isLink = info.st_mode & S_IFMT == S_IFLNK
        if isLink, !isYoursOrRoots(info.st_uid) { return Refusal("the link belongs to \(Self.user(info.st_uid)), not to you (\(Self.user(me)))") }
        guard fstatat(descriptor, name, &info, 0) == 0 else { return Refusal("cannot read it: \(String(cString: strerror(errno)))", isUntrusted: false) }
        if !isYoursOrRoots(info.st_uid) { return Refusal("it belongs to \(Self.user(info.st_uid)), not to you (\(Self.user(me)))") }
        if let who = writers(info, sticky: false) { return Refusal("it is writable by \(who) (mode 0\(String(info.st_mode & 0o7777, radix: 8)))") }
        guard isLink else { return nil }
        // A link's file lies elsewhere: whoever controls that folder could swap it.
        let target = Self.resolved((folder == "/" ? "" : folder) + "/" + name)
        let targetFolder = target.lastIndex(of: "/").map { $0 == target.startIndex ? "/" : String(target[..<$0]) } ?? "/"
        guard stat(targetFolder, &info) == 0 else { return Refusal("cannot read its folder \(targetFolder): \(String(cString: strerror(errno)))", isUntrusted: false) }
        if trustsEveryFolder || trustedFolders.contains(targetFolder) { return nil }
        return folderProblem(info).map { Refusal("the folder of the file it links to, \(targetFolder), \($0)") }
    }

    private func folderProblem(_ info: stat) -> String? {
        if !isYoursOrRoots(info.st_uid) { return "belongs to \(Self.user(info.st_uid)), not to you (\(Self.user(me)))" }
        if let who = writers(info, sticky: info.st_mode & S_ISVTX != 0) {
            return "is writable by \(who) (mode 0\(String(info.st_mode & 0o7777, radix: 8))) without the sticky bit"
        }
        return nil
    }

    /// Root's files are trusted by everyone: root can change anything of yours anyway.
    private func isYoursOrRoots(_ owner: uid_t) -> Bool { owner == me || owner == 0 }

    /// Who besides the owner may write: "others", "its group", or nil.
    private func writers(_ info: stat, sticky: Bool) -> String? { OtherWriters.of(mode: info.st_mode, group: info.st_gid, sticky: sticky, me: me) }

    /// "user 'alice' (uid 1000)", or "uid 1000" when it has no name.
    static func user(_ uid: uid_t) -> String { OtherWriters.user(uid) }

    /// `path` with links and `..` resolved, or as it is when that fails.
    static func resolved(_ path: String) -> String {
        guard let pointer = realpath(path, nil) else { return path }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}

extension WorkflowTrust {
    /// The rule for a file an `includes:` names (SPEC §15): the same as for
    /// a file the lookup finds, since it runs as much as the including one.
    static let includeSettings = IncludeSettings { path in
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        switch WorkflowTrust.fromEnvironment().open(folder: folder, name: name) {
        case .success(let descriptor):
            close(descriptor)
            return nil
        case .failure(let refusal):
            return refusal.description
        }
    }
}
