import Foundation
import Testing

/// A misspelt subcommand is named as such, not taken for a workflow file
/// that cannot be opened (issue 17); the usage lists every run option.
@Suite struct CommandSuggestionTests {
    @Test(arguments: [("grpah", "graph"), ("vaildate", "validate"), ("exprot", "export"), ("rn", "run")])
    func aMisspeltSubcommandGetsADidYouMean(typed: String, meant: String) throws {
        let directory = try TemporaryDirectory()
        _ = try directory.write("tasks:\n  a: {run: \"true\"}\n", to: "x.yaml")
        let run = try FlowrunBinary.run([typed, "x.yaml"], in: directory.path)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr == "flowrun: unknown command `\(typed)`; did you mean `\(meant)`?\n", "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
    }

    /// A file that does not exist and looks like no subcommand keeps the file error.
    @Test func aMissingFileThatIsNoSubcommandStillSaysCannotOpen() throws {
        let directory = try TemporaryDirectory()
        let run = try FlowrunBinary.run(["pipeline.yaml"], in: directory.path)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.hasPrefix("pipeline.yaml:1:1: error: cannot open: No such file or directory"), "\(run)")
        #expect(!run.stderr.contains("did you mean"), "\(run)")
    }

    /// A workflow file whose name is close to a subcommand still runs.
    @Test func anExistingFileNamedLikeASubcommandRuns() throws {
        let directory = try TemporaryDirectory()
        _ = try directory.write("tasks:\n  a: {run: \"true\"}\n", to: "grap")
        let run = try FlowrunBinary.run(["grap", "--output", "plain", "--log-dir", directory.path + "/record"], in: directory.path)
        #expect(run.exitStatus == 0, "\(run)")
    }

    @Test func theTopLevelUsageListsEveryRunOption() throws {
        let run = try FlowrunBinary.run(["--help"])
        for option in ["--dry-run", "--var", "--max-parallel", "--only", "--fail-fast", "--output", "--log-dir", "--stream"] {
            #expect(run.stdout.components(separatedBy: option).count >= 3, "\(option) in the usage and the option list:\n\(run.stdout)")
        }
        #expect(run.stdout.contains("flowrun validate [--quiet] [FILE...]"), "\(run.stdout)")
        #expect(run.stdout.contains("flowrun list [FILE]"), "\(run.stdout)")
        #expect(run.stdout.contains("flowrun export FILE --to argo"), "\(run.stdout)")
    }
}
