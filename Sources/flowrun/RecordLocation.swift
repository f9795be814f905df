import ArgumentParser
import FlowrunRecord
#if canImport(Glibc)
import Glibc
#endif

/// Where `runs`, `show`, `logs` and `resume` read run records: `--log-dir
/// DIR`, else the `.flowrun/runs` a run started here would use — the
/// nearest folder, from the current one up, that holds `.flowrun/runs` or
/// `flowrun.yaml`/`flowrun.yml` (the default-file lookup, SPEC §9).
///
/// The search climbs only through folders that are yours and that no one
/// else may write (SPEC §11): a `.flowrun` another user planted in a shared
/// folder above (`/tmp`) is never taken for your record.
struct RecordLocation: ParsableArguments {
    @Option(help: ArgumentHelp("The folder runs were recorded in, as given to `flowrun --log-dir` (default: the .flowrun/runs of the nearest folder, from here up through folders of yours, holding .flowrun/runs or flowrun.yaml/.yml).", valueName: "dir"))
    var logDir: String?

    func validate() throws {
        if logDir?.isEmpty == true { throw ValidationError("--log-dir needs a folder, found an empty value") }
    }

    /// The history, or exit 2 with what went wrong.
    func history() throws -> RunHistory {
        try reported { () throws(RunHistory.Problem) in try Self.history(logDir: logDir) }
    }

    /// `--log-dir`'s history, or without it the found folder's.
    static func history(logDir: String?) throws(RunHistory.Problem) -> RunHistory {
        if let logDir { return try RunHistory(path: logDir) }
        return try RunHistory(recordIn: foundFolder())
    }

    /// Without `--log-dir`: the nearest folder, from here up, holding
    /// `.flowrun/runs` or `flowrun.yaml`/`.yml` (`.` when it is the current one,
    /// or none is). The current folder is looked in whoever owns it (as a
    /// run writes there); a parent only while every folder climbed into is
    /// yours and not writable by others, sticky or not.
    static func foundFolder() -> String {
        let start = WorkflowFileLookup.currentDirectory()
        var folder = start
        while !holdsRecord(folder) {
            guard folder != "/", let slash = folder.lastIndex(of: "/") else { return "." }
            folder = slash == folder.startIndex ? "/" : String(folder[..<slash])
            guard isYoursAlone(folder) else { return "." }
        }
        return folder == start ? "." : folder
    }

    /// Whether `folder` holds `.flowrun/runs`, a `.flowrun` link (either way
    /// `RecordBase` judges what it is), or a workflow file the default
    /// lookup would take.
    private static func holdsRecord(_ folder: String) -> Bool {
        let base = folder == "/" ? "" : folder
        var info = stat()
        if lstat(base + "/.flowrun", &info) == 0, info.st_mode & S_IFMT == S_IFLNK { return true }
        if lstat(base + "/.flowrun/runs", &info) == 0 { return true }
        return ["/flowrun.yaml", "/flowrun.yml"].contains { name in
            stat(base + name, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        }
    }

    /// Whether `folder` is the user's own and no one else may write in it
    /// (`OtherWriters`, the lookup's rule: your own private group is you).
    private static func isYoursAlone(_ folder: String) -> Bool {
        var info = stat()
        return stat(folder, &info) == 0 && info.st_uid == geteuid() && OtherWriters.of(mode: info.st_mode, group: info.st_gid, sticky: false, me: geteuid()) == nil
    }
}

/// Runs `body`; a problem it throws is printed (`flowrun: …`) and exits 2.
func reported<Value>(_ body: () throws(RunHistory.Problem) -> Value) throws -> Value {
    do {
        return try body()
    } catch {
        Terminal.standardError.write("flowrun: \(error.description)\n")
        throw ExitCode(2)
    }
}
