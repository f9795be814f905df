import Foundation
import Testing

/// The bash completion script `flowrun --generate-completion-script bash`
/// prints completes task names, options, subcommands and workflow files in
/// a real bash (issue 19.2): the test sources the script and calls its
/// completion function as bash does on TAB (COMP_WORDS, COMP_CWORD, COMP_LINE,
/// COMP_POINT), then reads COMPREPLY.
@Suite struct CompletionTests {
    static let workflow = """
        tasks:
          lint: {run: 'true', description: check style}
          build: {run: 'true'}
          launch: {run: 'true', needs: [build]}
        groups:
          checks:
            foreach: [a, b]
            task: {run: 'true'}
        joins:
          ready: {wait: [lint, build]}
        finally:
          cleanup: {run: 'true'}
        """

    /// COMPREPLY, one candidate a line, for the command line `words` with
    /// the cursor at the end of the last word. The first word is the binary's path.
    static func complete(_ words: [String], in directory: String) throws -> [String] {
        let bash = try RunSandbox.tool("bash")
        let binary = try FlowrunBinary.path()
        let scratch = try TemporaryDirectory(prefix: "flowrun-completion")
        let generated = try FlowrunBinary.run(["--generate-completion-script", "bash"])
        #expect(generated.exitStatus == 0, "\(generated)")
        let scriptPath = try scratch.write(generated.stdout, to: "flowrun.bash")
        let quoted = ([binary] + words).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let driver = """
            source "$1"
            COMP_WORDS=(\(quoted.joined(separator: " ")))
            COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            COMP_LINE="${COMP_WORDS[*]}"
            COMP_POINT=${#COMP_LINE}
            COMPREPLY=()
            _flowrun flowrun "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let driverPath = try scratch.write(driver, to: "driver.bash")
        let outcome = try ChildProcess.run(
            executable: bash, arguments: ["--norc", "--noprofile", driverPath, scriptPath],
            environment: ["PATH=/usr/bin:/bin", "HOME=" + scratch.path], directory: directory,
            stdoutPath: scratch.path + "/out", stderrPath: scratch.path + "/err", timeout: .seconds(30), launcher: nil)
        let errors = (try? String(contentsOfFile: scratch.path + "/err", encoding: .utf8)) ?? ""
        #expect(outcome.exitStatus == 0 && errors.isEmpty, "bash: \(errors)")
        let output = (try? String(contentsOfFile: scratch.path + "/out", encoding: .utf8)) ?? ""
        return output.split(separator: "\n").map(String.init)
    }

    static let allNames: Set<String> = ["lint", "build", "launch", "checks", "ready", "cleanup"]

    @Test func taskNamesCompleteAfterOnlyAtTheTopLevelAndAfterRun() throws {
        let scratch = try TemporaryDirectory(prefix: "flowrun-completion")
        try scratch.write(Self.workflow, to: "build.yaml")
        #expect(Set(try Self.complete(["build.yaml", "--only", ""], in: scratch.path)) == Self.allNames)
        #expect(Set(try Self.complete(["run", "build.yaml", "--only", ""], in: scratch.path)) == Self.allNames)
        #expect(Set(try Self.complete(["build.yaml", "--only", "l"], in: scratch.path)) == ["lint", "launch"])
        #expect(Set(try Self.complete(["run", "build.yaml", "--dry-run", "--only", "bu"], in: scratch.path)) == ["build"])
    }

    @Test func withNoFileTheNamesComeFromTheWorkflowLookupFinds() throws {
        let scratch = try TemporaryDirectory(prefix: "flowrun-completion")
        try scratch.write(Self.workflow, to: "flowrun.yaml")
        try FileManager.default.createDirectory(atPath: scratch.path + "/src/deep", withIntermediateDirectories: true)
        #expect(Set(try Self.complete(["run", "--only", "c"], in: scratch.path + "/src/deep")) == ["checks", "cleanup"])
    }

    @Test func anInvalidWorkflowCompletesNoNamesAndPrintsNothing() throws {
        let scratch = try TemporaryDirectory(prefix: "flowrun-completion")
        try scratch.write("tasks: {a: {run: 'true', tiemout: 1s}}\n", to: "broken.yaml")
        #expect(try Self.complete(["broken.yaml", "--only", ""], in: scratch.path) == [])
    }

    /// `flowrun logs [RUN] TASK` completes the tasks of the run's record,
    /// fan-out members by name (`TaskNameCompletion.recordedCandidates`).
    @Test func logsCompletesTheTasksOfTheRunsRecord() throws {
        let scratch = try TemporaryDirectory(prefix: "flowrun-completion")
        try scratch.write("""
            tasks:
              first: {run: 'true'}
            groups:
              fetch:
                foreach: [eu, us]
                task: {run: 'true', name: 'fetch-${{ item }}'}
            """, to: "flowrun.yaml")
        let run = try FlowrunBinary.run(["flowrun.yaml", "--output", "plain"], in: scratch.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(Set(try Self.complete(["logs", ""], in: scratch.path)) == ["first", "fetch-eu", "fetch-us"])
        let id = try #require(try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/.flowrun/runs").first { $0 != "latest" })
        #expect(Set(try Self.complete(["logs", String(id.prefix(20)), "fetch-"], in: scratch.path)) == ["fetch-eu", "fetch-us"])
    }

    @Test func subcommandsOptionsAndWorkflowFilesComplete() throws {
        let scratch = try TemporaryDirectory(prefix: "flowrun-completion")
        try scratch.write(Self.workflow, to: "build.yaml")
        try scratch.write(Self.workflow, to: "deploy.yml")
        try scratch.write("not a workflow", to: "notes.txt")
        let first = Set(try Self.complete([""], in: scratch.path))
        #expect(first.isSuperset(of: ["run", "validate", "graph", "list", "export", "build.yaml", "deploy.yml"]), "\(first)")
        #expect(!first.contains("notes.txt"), "\(first)")
        #expect(Set(try Self.complete(["run", ""], in: scratch.path)).isSuperset(of: ["build.yaml", "deploy.yml"]))
        #expect(Set(try Self.complete(["build.yaml", "--o"], in: scratch.path)) == ["--only", "--output"])
        #expect(Set(try Self.complete(["build.yaml", "--output", ""], in: scratch.path)) == ["auto", "tty", "plain", "json"])
        #expect(try Self.complete(["va"], in: scratch.path) == ["validate"])
    }
}
