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

        /// The sentinel (the child the supervisor's watch forks to wake a
        /// stopped supervisor) ends early on a SIGUSR1 anyone of the user can
        /// send it, or the OOM killer: the engine's reaper reaped it, its pid
        /// was free for any process of the machine, and the run's end, which
        /// SIGKILLs the sentinel by pid, killed that process (found attacking:
        /// an unrelated `sleep` given that pid through ns_last_pid was killed).
        /// Now only the run's end reaps it: until then its pid stays the
        /// engine's, a zombie, whatever passes the reaper makes.
        @Test func aSentinelThatEndedEarlyKeepsItsPidUntilTheRunsEnd() throws {
            let sandbox = try RunSandbox()
            let live = try sandbox.start("""
                tasks:
                  first:
                    run: echo up > "$SANDBOX/first"; until [ -e "$SANDBOX/first.go" ]; do sleep 0.01; done
                  second:
                    run: until [ -e "$SANDBOX/second.go" ]; do sleep 0.01; done
                """, hardTimeout: .seconds(60))
            #expect(sandbox.waitFor("first"), "the first task never started")
            let engine = try #require(live.engine(), "no engine under \(live.pid)")
            func comm(_ pid: Int32) -> String { (ProcessProbe.text("/proc/\(pid)/comm") ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }
            var found: Int32?
            _ = poll(until: .seconds(15)) {
                found = ProcessProbe.children(of: engine).first { comm($0) == "flowrun-link" }
                return found != nil
            }
            let sentinel = try #require(found, "no sentinel among \(engine)'s children \(ProcessProbe.children(of: engine))")
            /// Its state letter and parent, from /proc/PID/stat; nil once the pid is free.
            func state(_ pid: Int32) -> (letter: String, parent: Int32)? {
                guard let stat = ProcessProbe.text("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                guard fields.count > 1, let parent = Int32(fields[1]) else { return nil }
                return (String(fields[0]), parent)
            }
            #expect(kill(sentinel, SIGUSR1) == 0)
            #expect(poll(until: .seconds(15)) { state(sentinel)?.letter != "S" }, "the sentinel did not end on SIGUSR1")
            // A task's exit: the reaper's wait4(-1) pass reaps whatever has ended.
            _ = FileManager.default.createFile(atPath: sandbox.file("first.go"), contents: nil)
            #expect(sandbox.waitForEvent("task_finished"), "the first task did not end")
            let held = state(sentinel)
            #expect(held?.letter == "Z" && held?.parent == engine, "the sentinel's pid \(sentinel) is no longer the engine's: \(String(describing: held))")
            _ = FileManager.default.createFile(atPath: sandbox.file("second.go"), contents: nil)
            let ended = live.finish()
            #expect(ended.exitStatus == 0, "\(ended)")
            #expect(state(sentinel) == nil, "the sentinel \(sentinel) outlived the run")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}
