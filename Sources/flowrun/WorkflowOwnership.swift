import FlowrunValues
#if canImport(Glibc)
import Glibc
#endif

/// Whether `resume` may run the workflow file a record names (SPEC §11):
/// it runs as you, so only a file the workflow lookup would trust runs —
/// the same `WorkflowTrust` check, so the two cannot drift: the file yours
/// or root's and writable by no one else, its folder (and a link's target
/// folder) likewise unless sticky, or its folder in `FLOWRUN_TRUSTED_DIRS`.
enum WorkflowOwnership {
    /// Why `path` must not run, nil when it may.
    static func problem(_ path: String) -> String? {
        let shown = TerminalText.escaped(path)
        var info = stat()
        guard stat(path, &info) == 0 else {
            return "cannot open its workflow file \(shown): \(String(cString: strerror(errno)))"
        }
        guard info.st_mode & S_IFMT == S_IFREG else { return "its workflow file \(shown) is not a plain file" }
        guard let refusal = WorkflowTrust.fromEnvironment().refusal(forFileAt: path) else { return nil }
        let folder = TerminalText.escaped(WorkflowTrust.folderAndName(path).folder)
        return "refusing its workflow file \(shown): \(TerminalText.escaped(refusal.description))"
            + "\(refusal.isUntrusted ? ", so another user could run commands as you" : ""); "
            + "to resume anyway, trust its folder (\(WorkflowTrust.variable)=\(folder)), or run it afresh by name (flowrun \(shown))"
    }
}
