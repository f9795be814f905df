import Glibc

/// A system call of the process layer failed: flowrun's own failure, not a
/// task's (a task that exits non-zero is a `ProcessExit`, not an error).
struct ProcessError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was being done, e.g. "posix_spawn /bin/sh" or "environment entry 3".
    var operation: String
    /// The errno value (or the error number posix_spawn returned).
    var code: Int32
    /// The program could not be exec'd (not found, not executable, not a program the kernel runs).
    var failedAtExec = false

    /// "posix_spawn /bin/nosuch: No such file or directory (errno 2)"
    var description: String {
        "\(operation): \(String(cString: strerror(code))) (errno \(code))"
    }
}
