import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `flowrun timeline [RUN] --trace FILE --timeline FILE.svg` — hidden, and
/// temporary: the options belong to `flowrun show` (`TimelineOptions`); this
/// command lets them be used and tested until `show` takes them.
struct TimelineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeline",
        abstract: "Draw a run record as a Chrome trace and/or an SVG timeline.",
        shouldDisplay: false
    )

    @Argument(help: ArgumentHelp("The run: its record folder, or a run id (or a unique prefix of one) under .flowrun/runs (default: the latest run).", valueName: "run"))
    var runFolder: String?

    @OptionGroup var files: TimelineOptions

    func validate() throws {
        if !files.isRequested { throw ValidationError("name at least one file: --trace FILE or --timeline FILE.svg") }
    }

    func run() throws {
        try files.write(runFolder: Self.folder(for: runFolder))
    }

    /// A folder as given, else the run id (or unique prefix) under
    /// `.flowrun/runs`, else the newest run there (ids sort by start time).
    static func folder(for run: String?) throws -> String {
        switch lookUp(run, in: ".flowrun/runs") {
        case .success(let folder): return folder
        case .failure(let problem):
            Terminal.standardError.write("flowrun: \(problem.message)\n")
            throw ExitCode(2)
        }
    }

    struct Problem: Error { var message: String }

    /// The folder for `run` under `base`, without printing (shell completion uses it too).
    static func lookUp(_ run: String?, in base: String) -> Result<String, Problem> {
        if let run, isDirectory(run + "/.") && (run.contains("/") || !isDirectory(base + "/" + run)) { return .success(run) }
        let ids = runIDs(in: base)
        guard let run else {
            guard let latest = ids.last else { return .failure(Problem(message: "no runs in \(base); name a run folder")) }
            return .success(base + "/" + latest)
        }
        let matches = ids.filter { $0.hasPrefix(run) }
        guard matches.count == 1 else {
            return .failure(Problem(message: matches.isEmpty
                ? "no run folder '\(run)', and no run id in \(base) starts with it"
                : "'\(run)' starts \(matches.count) run ids in \(base): \(matches.suffix(5).joined(separator: ", "))"))
        }
        return .success(base + "/" + matches[0])
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    private static func runIDs(in base: String) -> [String] {
        guard let directory = opendir(base) else { return [] }
        defer { closedir(directory) }
        var ids: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if !name.hasPrefix("."), name != "latest", isDirectory(base + "/" + name) { ids.append(name) }
        }
        return ids.sorted()
    }
}
