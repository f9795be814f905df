import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `flowrun` with no FILE (SPEC §9): `./flowrun.yaml` or `./flowrun.yml`,
/// else the nearest parent folder's, as go-task finds its Taskfile. A file
/// found this way runs as if flowrun had been started in its folder, so
/// relative `cwd:` and the `.flowrun/` record are taken from there. It runs
/// only if `WorkflowTrust` trusts it (SPEC §11): every command that looks
/// the file up (run, list, graph, validate, completion) goes through
/// `resolve` or `trustedPath`.
enum WorkflowFileLookup {
    static let names = ["flowrun.yaml", "flowrun.yml"]

    /// `file` itself when named; else the file found by lookup (an absolute
    /// path), after moving into its folder. Exits 2 when there is none, or
    /// when the one found is not to be trusted.
    static func resolve(_ file: String?) throws -> String {
        if let file { return file }
        let start = currentDirectory()
        guard let found = find(from: start) else {
            Terminal.standardError.write("flowrun: no \(names.joined(separator: " or ")) in \(start) or any parent folder; name a workflow file\n")
            throw ExitCode(2)
        }
        let folder: Int32
        switch WorkflowTrust.fromEnvironment().open(folder: found.folder, name: found.name) {
        case .success(let descriptor): folder = descriptor
        case .failure(let refusal):
            Terminal.standardError.write(refusalMessage(found, refusal))
            throw ExitCode(2)
        }
        defer { close(folder) }
        guard fchdir(folder) == 0 else {
            Terminal.standardError.write("flowrun: cannot enter \(found.folder): \(String(cString: strerror(errno)))\n")
            throw ExitCode(2)
        }
        return found.path
    }

    /// The path of the file lookup finds from the current folder, if there
    /// is one and it is trusted: for what only reads it (completion).
    static func trustedPath() -> String? {
        guard let found = lookUp(), found.isTrusted else { return nil }
        return found.path
    }

    /// The file lookup finds from the current folder, and whether it is trusted.
    static func lookUp() -> (path: String, isTrusted: Bool)? {
        guard let found = find(from: currentDirectory()) else { return nil }
        guard case .success(let folder) = WorkflowTrust.fromEnvironment().open(folder: found.folder, name: found.name) else {
            return (found.path, false)
        }
        close(folder)
        return (found.path, true)
    }

    /// One line: the file, why, and the two ways to run it anyway.
    static func refusalMessage(_ found: (folder: String, name: String, path: String), _ refusal: WorkflowTrust.Refusal) -> String {
        "flowrun: refusing \(found.path), found by lookup: \(refusal)\(refusal.isUntrusted ? ", so another user could run commands as you" : ""); "
            + "to run it anyway, name it (flowrun \(found.path)) or trust its folder (\(WorkflowTrust.variable)=\(found.folder))\n"
    }

    /// The first folder from `start` up to `/` holding one of `names`.
    static func find(from start: String) -> (folder: String, name: String, path: String)? {
        var folder = start
        while true {
            for name in names {
                let path = (folder == "/" ? "" : folder) + "/" + name
                var status = stat()
                // A folder named flowrun.yaml is not a workflow; a symbolic link to a file is.
                if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFDIR { return (folder, name, path) }
            }
            guard folder != "/", let slash = folder.lastIndex(of: "/") else { return nil }
            folder = slash == folder.startIndex ? "/" : String(folder[..<slash])
        }
    }

    /// `path` made absolute against the folder flowrun was started in, so a
    /// relative `--log-dir` keeps meaning what the user typed after the move.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : currentDirectory() + "/" + path
    }

    static func currentDirectory() -> String {
        // getcwd fails only when the folder was removed or is too deep to
        // name; `$PWD` or `.` then still says where lookup started.
        guard let pointer = getcwd(nil, 0) else {
            return getenv("PWD").map { String(cString: $0) } ?? "."
        }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
