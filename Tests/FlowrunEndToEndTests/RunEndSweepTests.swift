import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// The end-of-run sweep (issue 37): nothing of a run outlives it, and a
    /// run that left nothing does not read the process table to be sure.
    /// The engine is a child subreaper, so every orphan of a task comes back
    /// to it; once its sentinel is killed and reaped, no child left means no
    /// descendant at all. Reading every `/proc/PID/stat`, twice (the second
    /// look after killing the sentinel), was 13.6 % of a one-task run.
    /// What a task does leave is still found: `RunSupervisorTests`'
    /// `anEscapeeWithoutMarkerOrNameIsKilledAtTheRunsEnd` (a leftover that
    /// left the session and cleared its environment), `RunProcessTreeTests`.
    @Suite struct RunEndSweepTests {
        /// Opens of `/proc/<pid>/…` by a run of `workflow`, under `strace -f`,
        /// and the pids its tasks wrote to `pids` (one a line).
        func procOpens(_ workflow: String, sandbox: RunSandbox) throws -> (opens: [String], exitStatus: Int32?) {
            let strace = try RunSandbox.tool("strace")
            let path = try sandbox.write(workflow: workflow)
            let trace = sandbox.file("trace")
            let outcome = try ChildProcess.run(
                executable: strace,
                arguments: ["-f", "-qq", "-e", "trace=openat", "-o", trace, try FlowrunBinary.path()] + sandbox.arguments(path, []),
                environment: sandbox.environment.map { "\($0.key)=\($0.value)" } + ["PATH=/usr/bin:/bin"], directory: sandbox.path,
                stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"), timeout: .seconds(60), launcher: nil)
            let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            // `/proc/123/stat`, `/proc/123/environ`: the sweep's reads (not /proc/self, the engine's own facts).
            let opens = lines.filter { $0.range(of: #""/proc/[0-9]+/(stat|environ|status)""#, options: .regularExpression) != nil }
            return (opens, outcome.exitStatus)
        }

        @Test func aRunWhoseTasksLeftNothingReadsNoProcessTable() throws {
            let sandbox = try RunSandbox()
            let traced = try procOpens("""
                tasks:
                  a: { run: "true" }
                  b: { run: "echo b; sleep 0.01" }
                  c: { needs: [a, b], run: "sh -c 'exit 0'" }
                """, sandbox: sandbox)
            #expect(traced.exitStatus == 0, "\(sandbox.read("stdout") ?? "") \(sandbox.read("stderr") ?? "")")
            // The previous binary read 149 (every process's stat, twice).
            #expect(traced.opens.isEmpty, "opens of /proc/PID:\n\(traced.opens.prefix(10).joined(separator: "\n"))")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// A leftover that is the engine's child at the end (it left its
        /// task's group and session, so the task's own teardown missed it):
        /// the sweep runs, and it is gone when flowrun is.
        @Test func aLeftoverAtTheEndIsSweptStill() throws {
            let sandbox = try RunSandbox()
            let traced = try procOpens("""
                tasks:
                  a: { run: "setsid sleep 1000 >/dev/null 2>&1 & echo $! > \(sandbox.path)/left.pid" }
                """, sandbox: sandbox)
            #expect(traced.exitStatus == 0, "\(sandbox.read("stdout") ?? "") \(sandbox.read("stderr") ?? "")")
            let left = try #require(sandbox.pid(in: "left.pid"))
            #expect(!ProcessProbe.isAlive(left), "\(left) (\(ProcessProbe.commandLine(of: left))) outlived the run")
            #expect(!traced.opens.isEmpty, "the sweep did not look")
        }
    }
}
