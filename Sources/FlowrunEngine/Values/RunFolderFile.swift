#if canImport(Glibc)
import Glibc
#endif
import FlowrunRecord

/// Files flowrun itself makes in the run folder for one attempt: a stdout
/// too long for memory (`StdoutSpill`) and a script too long for one
/// argument (`ScriptFile`). Named after the task's log, one per attempt.
enum RunFolderFile {
    /// `logs/TASK.log` → `logs/TASK.log.N.SUFFIX`.
    static func path(forLog logPath: String, attempt: Int, suffix: String) -> String {
        "\(logPath).\(attempt).\(suffix)"
    }

    /// Creates the file for writing: never one that exists (a leftover or a
    /// planted link), readable by the owner only — it may hold secrets.
    /// The one place these files are opened.
    static func create(_ path: String) -> (descriptor: Int32, problem: String?) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return (-1, "cannot create \(path): \(String(cString: strerror(errno)))") }
        return (descriptor, nil)
    }
}

/// A `run:` script longer than the kernel takes in one argument
/// (MAX_ARG_STRLEN, 128 KiB on Linux): run as `SHELL FILE` instead of
/// `SHELL -c SCRIPT`, so a long value never surfaces as "Argument list too long".
enum ScriptFile {
    /// Linux's limit for one argument or environment entry, its NUL included (32 pages).
    static let singleArgumentLimit = 32 * 4096

    static func isNeeded(for script: String) -> Bool {
        script.utf8.count + 1 > singleArgumentLimit
    }

    /// Writes the script; returns why it could not be written, or nil.
    static func write(_ script: String, to path: String) -> String? {
        let created = RunFolderFile.create(path)
        guard created.problem == nil else { return created.problem }
        defer { close(created.descriptor) }
        var script = script
        let written = script.withUTF8 { writeAll(created.descriptor, UnsafeRawBufferPointer($0)) }
        return written ? nil : "cannot write \(path): \(String(cString: strerror(errno)))"
    }
}
