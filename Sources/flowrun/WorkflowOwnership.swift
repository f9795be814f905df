import FlowrunValues
#if canImport(Glibc)
import Glibc
#endif

/// Whether `resume` may run the workflow file a record names (SPEC §11):
/// it runs as you, so the file must be yours (or root's), in a folder no
/// other user may write without the sticky bit — or another user could
/// have put their own code where your run's file was.
enum WorkflowOwnership {
    /// Why `path` must not run, nil when it may.
    static func problem(_ path: String) -> String? {
        let shown = TerminalText.escaped(path)
        guard let resolved = realpath(path, nil) else {
            return "cannot open its workflow file \(shown): \(String(cString: strerror(errno)))"
        }
        let real = String(cString: resolved)
        free(resolved)
        var info = stat()
        guard stat(real, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return "its workflow file \(shown) is not a plain file"
        }
        let me = geteuid()
        if info.st_uid != me && info.st_uid != 0 {
            return "its workflow file \(shown) belongs to uid \(info.st_uid), not to you (uid \(me)); resume runs it as you, so it runs only your own (run it with `flowrun FILE` if you trust it)"
        }
        let folder = real.lastIndex(of: "/").map { $0 == real.startIndex ? "/" : String(real[..<$0]) } ?? "."
        guard stat(folder, &info) == 0 else { return "cannot check \(TerminalText.escaped(folder)): \(String(cString: strerror(errno)))" }
        if info.st_uid != me && info.st_uid != 0 {
            return "its workflow file \(shown) lies in \(TerminalText.escaped(folder)), which belongs to uid \(info.st_uid), not to you; another user could have replaced it (run it with `flowrun FILE` if you trust it)"
        }
        if info.st_mode & 0o022 != 0 && info.st_mode & S_ISVTX == 0 {
            return "its workflow file \(shown) lies in \(TerminalText.escaped(folder)), which others may write (mode 0\(String(info.st_mode & 0o7777, radix: 8))) without the sticky bit; another user could have replaced it (run it with `flowrun FILE` if you trust it)"
        }
        return nil
    }
}
