import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import FlowrunReporting

/// `--trace FILE` and `--timeline FILE.svg`: a run record drawn as a Chrome
/// trace (Perfetto, chrome://tracing) and as an SVG Gantt chart. An option
/// group, so that `flowrun show` can take it (`@OptionGroup var timeline:
/// TimelineOptions`, then `try timeline.write(runFolder:)`).
struct TimelineOptions: ParsableArguments {
    @Option(name: .customLong("trace"),
            help: ArgumentHelp("Write the run as Chrome trace event JSON to this file, to open in ui.perfetto.dev or chrome://tracing: a track per slot, a slice per attempt, waits, group and join completions, arrows from needs.", valueName: "file"),
            completion: .file(extensions: ["json"]))
    var trace: String?

    @Option(name: .customLong("timeline"),
            help: ArgumentHelp("Write the run as an SVG Gantt chart to this file: a row per slot, a bar per attempt coloured by status, waits and completions below.", valueName: "file.svg"),
            completion: .file(extensions: ["svg"]))
    var timeline: String?

    /// Whether either file was asked for.
    var isRequested: Bool { trace != nil || timeline != nil }

    func validate() throws {
        if trace?.isEmpty == true { throw ValidationError("--trace needs a file, found an empty value") }
        if timeline?.isEmpty == true { throw ValidationError("--timeline needs a file, found an empty value") }
    }

    /// Writes the requested files for the run record in `runFolder`
    /// (`.flowrun/runs/RUN_ID`); exits 1 naming the path if one cannot be
    /// read or written.
    func write(runFolder: String) throws {
        guard isRequested else { return }
        let run: RunTimeline
        do {
            run = try RunTimeline(runFolder: runFolder)
        } catch {
            Terminal.standardError.write("flowrun: \(error)\n")
            throw ExitCode(1)
        }
        if let trace { try Self.save(run.chromeTrace, to: trace) }
        if let timeline { try Self.save(run.svg, to: timeline) }
    }

    /// Whole or not at all, never through a planted link (`SafeFileWriter`).
    private static func save(_ text: String, to path: String) throws {
        do {
            try SafeFileWriter.write(text, to: path)
        } catch {
            Terminal.standardError.write("flowrun: \(error)\n")
            throw ExitCode(1)
        }
    }
}
