import ArgumentParser
import FlowrunRecord
#if canImport(Glibc)
import Glibc
#endif

/// Where `runs`, `show` and `logs` read run records: `--log-dir DIR`, else
/// the `.flowrun/runs` a run started here would use — the nearest folder,
/// from the current one up, that holds `.flowrun/runs`, `flowrun.yaml` or
/// `flowrun.yml` (the default-file lookup, SPEC §9).
struct RecordLocation: ParsableArguments {
    @Option(help: ArgumentHelp("The folder runs were recorded in, as given to `flowrun --log-dir` (default: the .flowrun/runs of the nearest folder, from here up, holding .flowrun/runs or flowrun.yaml/.yml).", valueName: "dir"))
    var logDir: String?

    func validate() throws {
        if logDir?.isEmpty == true { throw ValidationError("--log-dir needs a folder, found an empty value") }
    }

    /// The record folder's path, as shown to the user.
    func path() -> String {
        logDir ?? Self.foundPath()
    }

    /// Without `--log-dir`: the `.flowrun/runs` of the nearest folder, from
    /// here up, holding `.flowrun/runs` or `flowrun.yaml`/`.yml`.
    static func foundPath() -> String {
        let start = WorkflowFileLookup.currentDirectory()
        var folder = start
        while true {
            var info = stat()
            let base = folder == "/" ? "" : folder
            if stat(base + "/.flowrun/runs", &info) == 0, info.st_mode & S_IFMT == S_IFDIR { break }
            if WorkflowFileLookup.find(from: folder)?.folder == folder { break }
            guard folder != "/", let slash = folder.lastIndex(of: "/") else {
                folder = start
                break
            }
            folder = slash == folder.startIndex ? "/" : String(folder[..<slash])
        }
        return folder == start ? ".flowrun/runs" : (folder == "/" ? "" : folder) + "/.flowrun/runs"
    }

    /// The history, or exit 2 with what went wrong.
    func history() throws -> RunHistory {
        try reported { () throws(RunHistory.Problem) in try RunHistory(path: path()) }
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
