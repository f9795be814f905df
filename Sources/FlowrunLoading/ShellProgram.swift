#if canImport(Glibc)
import Glibc
#endif

/// Whether the top-level `shell:` program can start, checked as the spawn
/// will look for it (`flowrun_spawn`): a name without `/` in flowrun's
/// `PATH`, an absolute path as it is. A relative path with `/` depends on
/// the folder the run starts in, so it is left to the run.
enum ShellProgram {
    /// Why `program` cannot start (completes "shell 'bash' …"), or nil.
    static func problem(_ program: String) -> String? {
        if program.hasPrefix("/") {
            var info = stat()
            guard stat(program, &info) == 0 else { return "does not exist: give the path of an installed shell, like /bin/bash" }
            guard info.st_mode & S_IFMT != S_IFDIR, access(program, X_OK) == 0 else {
                return "is not an executable file: give the path of a shell, like /bin/bash"
            }
            return nil
        }
        guard !program.contains("/") else { return nil }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for entry in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (entry.isEmpty ? "." : String(entry)) + "/" + program
            var info = stat()
            if stat(candidate, &info) == 0, info.st_mode & S_IFMT != S_IFDIR, access(candidate, X_OK) == 0 { return nil }
        }
        return "is not found on PATH: install it, or give its full path"
    }
}
