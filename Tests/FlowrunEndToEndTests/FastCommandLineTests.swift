import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// flowrun reads its commonest command lines itself (`FastCommandLine`),
/// without argument-parser's reflection; argument-parser reads the rest.
/// Each line here, read both ways (`FLOWRUN_PARSER=argument-parser` sends
/// every line through argument-parser), prints the same and exits the same.
/// And only a command line that may start a task forks the supervisor.
@Suite struct FastCommandLineTests {
    static let good = """
        tasks:
          fetch: {run: echo fetch}
          build: {run: echo build, needs: fetch}
          broken: {run: "exit 3"}
        """
    static let bad = """
        tasks:
          build: {run: make, tiemout: 5s}
          test: {run: make test, needs: [biuld]}
        """

    /// `GOOD`, `BAD` and `LOG` stand for the files and the record folder.
    static let commandLines: [[String]] = [
        ["--version"],
        ["validate", "GOOD"],
        ["validate", "BAD"],
        ["validate", "-q", "GOOD", "BAD"],
        ["validate", "--quiet", "GOOD"],
        ["validate", "missing.yaml"],
        ["list", "GOOD"],
        ["list", "GOOD", "--output", "json"],
        ["list", "GOOD", "--output", "yaml"],
        ["list", "missing.yaml"],
        ["GOOD", "--dry-run"],
        ["run", "GOOD", "build", "--dry-run", "--output", "json"],
        ["GOOD", "nosuchtask", "--dry-run"],
        ["GOOD", "--keep", "0"],
        ["GOOD", "--max-parallel", "0"],
        ["GOOD", "--var", "novalue", "--dry-run"],
        ["GOOD", "--bogus"],
        ["GOOD", "--output", "fancy"],
        ["GOOD", "build", "--output", "plain", "--log-dir", "LOG"],
        ["GOOD", "fetch", "broken", "--output", "plain", "--log-dir", "LOG", "--force", "--yes"],
        ["--help"],
        ["validate", "--help"],
        // `watch` is its own command, never a target of run's.
        ["watch", "missing.yaml"],
        ["watch", "BAD"],
    ]

    @Test(arguments: commandLines)
    func readsTheSameAsArgumentParser(_ line: [String]) throws {
        let directory = try TemporaryDirectory()
        let good = try directory.write(Self.good, to: "good.yaml")
        let bad = try directory.write(Self.bad, to: "bad.yaml")
        let arguments = line.map { word in
            switch word {
            case "GOOD": good
            case "BAD": bad
            case "LOG": directory.path + "/record"
            default: word
            }
        }
        let fast = try FlowrunBinary.run(arguments, in: directory.path)
        let parsed = try FlowrunBinary.run(arguments, in: directory.path, environment: ["FLOWRUN_PARSER": "argument-parser"])
        fast.expectNoCrash()
        #expect(fast.exitStatus == parsed.exitStatus, "\(fast)\n\(parsed)")
        #expect(Self.normalized(fast.stdout) == Self.normalized(parsed.stdout), "\(fast)\n\(parsed)")
        #expect(Self.normalized(fast.stderr) == Self.normalized(parsed.stderr), "\(fast)\n\(parsed)")
        if line == ["--help"] { #expect(fast.stdout.contains("SUBCOMMANDS:"), "\(fast)") }
    }

    /// A run's times, durations and run ids differ from run to run, and
    /// so does the order of its slowest tasks.
    static func normalized(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("    slowest: ") }.joined(separator: "\n")
            .replacing(runIDPattern, with: "ID").replacing(/[0-9a-f]{16}/, with: "ID").replacing(/[0-9]+/, with: "N")
    }

    /// The subcommands flowrun reads without argument-parser's tree
    /// (`PassedArguments.otherCommands`, `TaskStartingCommand.startsNone`,
    /// `FastCommandLine.command`'s `watch`) are these; a new subcommand must
    /// be added there too.
    @Test func theSubcommandsAreTheOnesTheFastReadingKnows() throws {
        let help = try FlowrunBinary.run(["--help"])
        let section = try #require(help.stdout.components(separatedBy: "SUBCOMMANDS:").last)
        let names = section.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ")
            // `  name   abstract`, then `  See 'flowrun help <subcommand>' …`.
            return line.hasPrefix("  ") && !line.hasPrefix("   ") && words.first != "See" ? words.first.map(String.init) : nil
        }
        #expect(names == ["run", "watch", "validate", "graph", "list", "export", "runs", "show", "logs", "resume"], "\(help.stdout)")
    }

    /// Processes (not threads) a command line's flowrun creates, by strace.
    static func processesCreated(_ arguments: [String], in directory: String) throws -> Int {
        let strace = try RunSandbox.tool("strace")
        let trace = directory + "/trace-\(UUID().uuidString)"
        let outcome = try ChildProcess.run(
            executable: strace, arguments: ["-f", "-qq", "-e", "trace=fork,vfork,clone,clone3", "-o", trace, try FlowrunBinary.path()] + arguments,
            environment: ["PATH=/usr/bin:/bin"], directory: directory,
            stdoutPath: directory + "/stdout", stderrPath: directory + "/stderr", timeout: .seconds(60), launcher: nil)
        #expect(outcome.exitStatus == 0, "\((try? String(contentsOfFile: directory + "/stderr", encoding: .utf8)) ?? "")")
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
        return lines.filter { line in
            (line.contains("fork(") || line.contains("clone(") || line.contains("clone3(")) && !line.contains("CLONE_THREAD")
        }.count
    }

    @Test func onlyACommandThatMayStartATaskForksTheSupervisor() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("tasks:\n  t: {sleep: 0s}\n", to: "flowrun.yaml")
        for line in [["--version"], ["validate", file], ["list", file], [file, "--dry-run"], ["graph", file]] {
            #expect(try Self.processesCreated(line, in: directory.path) == 0, "flowrun \(line.joined(separator: " ")) forked")
        }
        // A run forks the supervisor (its engine), even when no task starts a process.
        #expect(try Self.processesCreated([file, "--output", "plain", "--log-dir", directory.path + "/record"], in: directory.path) >= 1)
    }
}
