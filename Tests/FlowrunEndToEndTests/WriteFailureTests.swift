import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 31 item 8: a write that fails is never swallowed. A command whose
/// output cannot be written (a file named with `-o`, or stdout itself:
/// `> /dev/full`) fails, naming the file and the reason; a run keeps its
/// own exit code when only its console fails (SPEC §7) but says why.
@Suite struct WriteFailureTests {
    static let workflow = "tasks:\n  build: {run: 'echo built'}\n  test: {run: 'echo tested', needs: [build]}\n"

    /// The built binary with stdout opened on `stdoutPath` (`/dev/full`).
    static func flowrun(_ arguments: [String], stdout stdoutPath: String, in directory: String,
                        wrappedIn wrapper: [String] = []) throws -> FlowrunRun {
        let binary = try FlowrunBinary.path()
        let scratch = try TemporaryDirectory(prefix: "flowrun-write")
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        let command = wrapper + [binary] + arguments
        let outcome = try ChildProcess.run(
            executable: command[0], arguments: Array(command.dropFirst()),
            environment: environment.map { "\($0.key)=\($0.value)" }, directory: directory,
            stdoutPath: stdoutPath, stderrPath: scratch.path + "/stderr", timeout: .seconds(30), launcher: nil)
        return FlowrunRun(
            arguments: arguments, stdout: "", stderr: ProcessProbe.text(scratch.path + "/stderr") ?? "",
            exitStatus: outcome.exitStatus, signal: outcome.signal, timedOut: outcome.timedOut,
            wallSeconds: outcome.wallSeconds, peakRSSBytes: outcome.peakRSSBytes, peakRSSIsExact: false)
    }

    /// A folder holding `flowrun.yaml` and the record of one run of it.
    static func recorded() throws -> TemporaryDirectory {
        let folder = try TemporaryDirectory(prefix: "flowrun-write")
        try folder.write(workflow, to: "flowrun.yaml")
        let run = try FlowrunBinary.run(["--output", "plain"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        return folder
    }

    /// `export -o /dev/full`: exit 1, the file and errno named (it exited 0).
    @Test func aNamedFileThatCannotBeWrittenFailsTheCommand() throws {
        let folder = try Self.recorded()
        let run = try FlowrunBinary.run(["export", "flowrun.yaml", "--to", "argo", "-o", "/dev/full"], in: folder.path)
        run.expectNoCrash()
        #expect(run.exitStatus == 1, "\(run)")
        #expect(run.stderr == "flowrun: cannot write /dev/full: No space left on device\n", "\(run)")
        var info = stat()
        #expect(stat("/dev/full", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR, "/dev/full must still be the device")
        let missing = try FlowrunBinary.run(["show", "--trace", folder.path + "/no/such/folder/trace.json"], in: folder.path)
        #expect(missing.exitStatus == 1, "\(missing)")
        #expect(missing.stderr == "flowrun: cannot write \(folder.path)/no/such/folder/trace.json: No such file or directory\n", "\(missing)")
    }

    static let printingCommands: [[String]] = [
        ["export", "flowrun.yaml", "--to", "argo"], ["list"], ["list", "--output", "json"], ["graph"], ["validate"],
        ["--dry-run"], ["runs"], ["show"], ["logs", "build"], ["--generate-completion-script", "bash"], ["--help"], ["--version"],
    ]

    /// Every command that prints, with stdout on `/dev/full`: exit 1 and
    /// `flowrun: cannot write standard output: No space left on device`.
    @Test(arguments: printingCommands)
    func stdoutThatCannotBeWrittenFailsTheCommand(arguments: [String]) throws {
        let folder = try Self.recorded()
        let run = try Self.flowrun(arguments, stdout: "/dev/full", in: folder.path)
        run.expectNoCrash()
        #expect(run.exitStatus == 1, "\(run)")
        #expect(run.stderr.hasSuffix("flowrun: cannot write standard output: No space left on device\n"), "\(run)")
    }

    /// A reader that left before the command printed (a pipe whose read
    /// end is closed, as after `| head -1`): exit 141, as if SIGPIPE had
    /// ended it, and nothing said on stderr (it exited 0 as if all was read).
    @Test(arguments: [["list"], ["graph"], ["show"], ["logs", "build"], ["--help"]])
    func aReaderThatLeftEndsTheCommandQuietlyWith141(arguments: [String]) throws {
        let folder = try Self.recorded()
        let result = try PythonScript.run("""
            import os
            r, w = os.pipe()
            os.close(r)
            os.dup2(w, 1)
            os.chdir(sys.argv[1])
            os.execv(sys.argv[2], sys.argv[2:])
            """, arguments: [folder.path, try FlowrunBinary.path()] + arguments)
        #expect(result.exitStatus == 141, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    /// The same commands into a file write all of it and exit 0: the
    /// check only fails what failed.
    @Test(arguments: printingCommands)
    func stdoutThatIsWrittenExitsZero(arguments: [String]) throws {
        let folder = try Self.recorded()
        let run = try Self.flowrun(arguments, stdout: folder.path + "/out", in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stderr.isEmpty, "\(run)")
        #expect(!(ProcessProbe.text(folder.path + "/out") ?? "").isEmpty)
    }

    /// Whether this machine lets the test mount a tmpfs in a mount namespace of its own.
    static let canMountTmpfs: Bool = {
        guard let unshare = try? RunSandbox.tool("unshare"), let scratch = try? TemporaryDirectory(prefix: "flowrun-mount"),
              let outcome = try? ChildProcess.run(
                executable: unshare, arguments: ["-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs \"$0\"", scratch.path],
                environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], directory: "/",
                stdoutPath: "/dev/null", stderrPath: "/dev/null", timeout: .seconds(10), launcher: nil) else { return false }
        return outcome.exitStatus == 0
    }()

    /// A record on a disk that fills up (a 128 KiB tmpfs, ENOSPC, where
    /// `RunRecordPrivacyTests` uses the file size limit): the run goes on,
    /// fails with exit 1, and says once which file could not be written and why.
    @Test(.enabled(if: canMountTmpfs)) func aRecordOnAFullDiskFailsTheRunNamingTheFile() throws {
        let folder = try TemporaryDirectory(prefix: "flowrun-write")
        try folder.write("""
            tasks:
              big: {run: "yes 'a line of the log that fills the disk' | head -n 8000"}
              after: {run: "true", needs: [big]}
            """, to: "flowrun.yaml")
        #expect(mkdir(folder.path + "/records", 0o700) == 0)
        let mounted = [try RunSandbox.tool("unshare"), "-m", "sh", "-c", "mount -t tmpfs -o size=128k,mode=0700 tmpfs records && exec \"$0\" \"$@\""]
        let run = try Self.flowrun(["--output", "plain", "--log-dir", "records"], stdout: "/dev/null", in: folder.path, wrappedIn: mounted)
        run.expectNoCrash()
        #expect(run.exitStatus == 1, "\(run)")
        #expect(run.stderr.range(of: #"^flowrun: the run record is incomplete: cannot write \#(folder.path)/records/[0-9a-f.-]+/logs/000/000000-big.log: No space left on device\n$"#,
                                 options: .regularExpression) != nil, "\(run)")
    }

    /// A run whose console fails is not stopped and keeps the run's exit
    /// code (SPEC §7: the record is complete), but says that stdout failed
    /// and why, not that a reader went away.
    @Test func aRunWhoseStdoutFailsSaysSoAndKeepsItsRecord() throws {
        let folder = try TemporaryDirectory(prefix: "flowrun-write")
        try folder.write(Self.workflow, to: "flowrun.yaml")
        let run = try Self.flowrun(["--output", "plain"], stdout: "/dev/full", in: folder.path)
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stderr.range(of: #"^flowrun: [0-9]+ console lines? dropped: standard output failed \(No space left on device\)\n$"#,
                                 options: .regularExpression) != nil, "\(run)")
        let shown = try FlowrunBinary.run(["show"], in: folder.path)
        #expect(shown.exitStatus == 0 && shown.stdout.contains("succeeded"), "\(shown)")
    }
}
