import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A task that ignores SIGTERM, on a cluster that tracks processes by
/// parentage (`proctrack/linuxproc`, the test cluster): Slurm signals only
/// the job script's process group, so its TERM ended the script, the task
/// was re-parented to init, and Slurm's later KILL missed it — the job left
/// `squeue`, the process lived on. The job script now outlives the task,
/// passes the stop on to the task's own process group and SIGKILLs that
/// group after `kill_grace` (`SlurmJobScript.element`), so the job is gone
/// within the grace, not after Slurm's `KillWait` (30 s on the test cluster).
extension SlurmTests {
    /// The grace every test here gives: short against the cluster's 30 s KillWait.
    static let grace = 3.0

    /// Ignores TERM (as does the `sleep` it starts), its pid in `$SANDBOX/NAME.pid`.
    static func termIgnoring(_ name: String) -> String {
        #"trap '' TERM; echo $$ > "$SANDBOX/\#(name).pid"; while :; do sleep 1; done"#
    }

    /// The pid a task wrote, once it has (the job started); nil after `timeout`.
    static func taskPID(_ sandbox: RunSandbox, _ name: String, within timeout: Duration = .seconds(60)) -> Int32? {
        var pid: Int32?
        _ = SlurmTestCluster.until(timeout) {
            pid = sandbox.lines("\(name).pid").first.flatMap { Int32($0) }
            return pid != nil
        }
        return pid
    }

    /// Within the grace and a few seconds of `since`: the task's process is
    /// gone (a zombie counts as gone: init reaps it) and squeue lists no
    /// job. Records a failure naming what is left; the seconds it took.
    @discardableResult
    static func expectTaskAndJobsGone(_ pid: Int32, since: ContinuousClock.Instant, _ what: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) throws -> Double {
        let gone = try SlurmTestCluster.until(.seconds(grace + 7)) {
            try !ProcessProbe.isAlive(pid) && SlurmTestCluster.jobs().isEmpty
        }
        let seconds = (ContinuousClock.now - since).seconds
        #expect(!ProcessProbe.isAlive(pid), "\(what): the task (pid \(pid), \(ProcessProbe.commandLine(of: pid))) outlived its job",
                sourceLocation: sourceLocation)
        #expect(gone, "\(what): \(SlurmTestCluster.leftovers())", sourceLocation: sourceLocation)
        if ProcessProbe.isAlive(pid) { kill(pid, SIGKILL) }
        return seconds
    }

    /// Waits until flowrun has seen the job running (the live view's event), so the stop is a graceful one.
    static func untilSeenRunning(_ sandbox: RunSandbox) -> Bool {
        SlurmTestCluster.until(.seconds(60)) {
            let runs = (try? FileManager.default.contentsOfDirectory(atPath: sandbox.logDirectory)) ?? []
            return runs.contains { run in
                (ProcessProbe.text(sandbox.logDirectory + "/" + run + "/events.jsonl") ?? "").contains(#""state":"RUNNING""#)
            }
        }
    }

    /// (a) A timeout: the task gets TERM, ignores it, is SIGKILLed by its
    /// job script after kill_grace; the attempt is `timed_out` with the
    /// exit code a local one killed after its grace has (137).
    @Test func aTermIgnoringTaskPastItsTimeoutIsKilledAfterTheGrace() throws {
        let sandbox = try RunSandbox()
        let flowrun = try sandbox.start("""
            executor: slurm
            kill_grace: \(Int(Self.grace))s
            tasks:
              stubborn:
                timeout: 4s
                run: \(Self.termIgnoring("stubborn"))
            """, hardTimeout: .seconds(120))
        let pid = try #require(Self.taskPID(sandbox, "stubborn"), "the job did not start")
        let ended = flowrun.finish()
        #expect(ended.exitStatus == 1 && !ended.hung, "\(ended)")
        try Self.expectTaskAndJobsGone(pid, since: .now, "timeout")
        let finished = try #require(try sandbox.record().finished("stubborn"))
        #expect(finished["status"] as? String == "timed_out" && finished["exit_code"] as? Int == 137, "\(finished)")
        // Timeout, grace, a poll or two: not Slurm's KillWait (30 s) on top.
        #expect(ended.wallSeconds < 4 + Self.grace + 12, "\(ended)")
    }

    /// (b) Ctrl-C: the run ends within the grace and a poll, the task with it.
    @Test func ctrlCEndsATermIgnoringTaskWithinTheGrace() throws {
        let sandbox = try RunSandbox()
        let flowrun = try sandbox.start("""
            executor: slurm
            kill_grace: \(Int(Self.grace))s
            tasks:
              stubborn: { run: "\(Self.termIgnoring("stubborn").replacing("\"", with: "\\\""))" }
            """, hardTimeout: .seconds(120))
        let pid = try #require(Self.taskPID(sandbox, "stubborn"), "the job did not start")
        #expect(Self.untilSeenRunning(sandbox), "flowrun never saw the job running")
        let stopped = ContinuousClock.now
        flowrun.signalGroup(SIGINT)
        let ended = flowrun.finish()
        #expect(ended.exitStatus == 130 && !ended.hung, "\(ended)")
        let seconds = try Self.expectTaskAndJobsGone(pid, since: stopped, "Ctrl-C")
        #expect(seconds < Self.grace + 6, "Ctrl-C to nothing left took \(seconds) s")
    }

    /// (c) A join's quorum: the loser's job goes within the grace, and its task with it.
    @Test func aQuorumLoserThatIgnoresTermIsKilledAfterTheGrace() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            executor: slurm
            kill_grace: \(Int(Self.grace))s
            tasks:
              fast: { run: 'until [ -s "$SANDBOX/slow.pid" ]; do sleep 0.1; done; echo first' }
              slow: { run: "\(Self.termIgnoring("slow").replacing("\"", with: "\\\""))" }
            joins:
              first: { wait: [fast, slow], need: 1 }
            """, timeout: .seconds(120))
        #expect(run.exitStatus == 0, "\(run)")
        let pid = try #require(sandbox.lines("slow.pid").first.flatMap { Int32($0) }, "\(run)")
        try Self.expectTaskAndJobsGone(pid, since: .now, "quorum")
        #expect(try sandbox.record().finished("slow")?["status"] as? String == "cancelled", "\(run)")
    }

    /// `kill -9` of flowrun (the engine then kills every task at once) and
    /// of the engine (the supervisor's `scancel`s): both send QUIT first,
    /// and the task goes at once. (A plain `scancel` alone is Slurm's TERM,
    /// which the job script passes on with the grace, then KILL after
    /// KillWait: 3.8 s here with a 3 s grace, 29.9 s with a 60 s one.)
    @Test(arguments: ["kill -9 flowrun", "kill -9 engine"])
    func killingFlowrunEndsATermIgnoringTaskAtOnce(how: String) throws {
        let sandbox = try RunSandbox()
        let flowrun = try sandbox.start("""
            executor: slurm
            kill_grace: 60s
            tasks:
              stubborn: { run: "\(Self.termIgnoring("stubborn").replacing("\"", with: "\\\""))" }
            """, hardTimeout: .seconds(120))
        let pid = try #require(Self.taskPID(sandbox, "stubborn"), "the job did not start")
        #expect(Self.untilSeenRunning(sandbox), "flowrun never saw the job running")
        let killed = ContinuousClock.now
        kill(how == "kill -9 flowrun" ? flowrun.pid : try #require(flowrun.engine()), SIGKILL)
        let seconds = try Self.expectTaskAndJobsGone(pid, since: killed, how)
        #expect(seconds < 10, "\(how) to nothing left took \(seconds) s (the grace is 60 s, KillWait 30 s)")
        _ = flowrun.finish()
    }

    /// A task that ends on TERM but leaves a child in its group that ignores
    /// it: the job script's `timeout` saw its own child end and exited, the
    /// child was adopted by init, and linuxproc's KILL missed it — it lived
    /// on after the run (a local task's leftovers get TERM, then KILL after
    /// the grace). The job script now does the same to what the task left
    /// in its group, and writes the exit file once it is gone.
    @Test func aChildThatIgnoresTermGoesWithItsTaskAfterTheGrace() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            executor: slurm
            kill_grace: \(Int(Self.grace))s
            tasks:
              parent:
                timeout: 4s
                run: |
                  sh -c 'trap "" TERM; echo $$ > "$SANDBOX/child.pid"; while :; do sleep 1; done' &
                  sleep 300
            """, timeout: .seconds(120))
        #expect(run.exitStatus == 1, "\(run)")
        let pid = try #require(sandbox.lines("child.pid").first.flatMap { Int32($0) }, "\(run)")
        try Self.expectTaskAndJobsGone(pid, since: .now, "a child that ignores TERM")
        let finished = try #require(try sandbox.record().finished("parent"))
        #expect(finished["status"] as? String == "timed_out" && finished["exit_code"] as? Int == 143, "\(finished)")
    }

    /// A task's `env:` applies to the task, not to the job script around
    /// it: a `PATH` without /bin left the script's own `mv` unfound (no exit
    /// file: the job was "lost"), and variables named `out`, `err` or
    /// `status_file` sent the task's output and exit status to the user's
    /// paths. And a job whose PATH has no `timeout` says so.
    @Test func aTasksEnvDoesNotReachTheJobScriptAndAMissingTimeoutIsNamed() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            executor: slurm
            tasks:
              own:
                env:
                  PATH: /nonexistent
                  out: \(sandbox.path)/hijacked.out
                  status_file: \(sandbox.path)/hijacked.exit
                run: echo "path $PATH out $out"; exit 3
            """, timeout: .seconds(90))
        #expect(run.exitStatus == 1, "\(run)")
        let own = try #require(try sandbox.record().finished("own"), "\(run)")
        #expect(own["exit_code"] as? Int == 3, "\(own)")
        #expect(try sandbox.record().task("own")?["stdout"] as? String == "path /nonexistent out \(sandbox.path)/hijacked.out", "\(run)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path + "/hijacked.exit"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.path + "/hijacked.out"))

        // Slurm's tools alone on flowrun's PATH (which the job inherits): no timeout there.
        let bin = sandbox.path + "/slurm-only"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for tool in ["sbatch", "squeue", "scancel", "sacct", "hostname"] {
            try FileManager.default.createSymbolicLink(atPath: "\(bin)/\(tool)", withDestinationPath: try RunSandbox.tool(tool))
        }
        let bare = try RunSandbox()
        let missing = try bare.run("""
            executor: slurm
            tasks:
              plain: { run: echo never }
            """, timeout: .seconds(90), environment: ["PATH": bin])
        #expect(missing.exitStatus == 1, "\(missing)")
        #expect(missing.stdout.contains("coreutils' timeout on the job's PATH"), "\(missing)")
        #expect(try SlurmTestCluster.jobs().isEmpty)
    }

    /// A task that ends on TERM ends at once, with 128+15, however long the grace.
    @Test func aTaskThatEndsOnTermIsNotGivenTheGrace() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            executor: slurm
            kill_grace: 60s
            tasks:
              obedient:
                timeout: 3s
                run: echo $$ > "$SANDBOX/obedient.pid"; sleep 300
            """, timeout: .seconds(120))
        #expect(run.exitStatus == 1, "\(run)")
        let finished = try #require(try sandbox.record().finished("obedient"))
        #expect(finished["status"] as? String == "timed_out" && finished["exit_code"] as? Int == 143, "\(finished)")
        #expect(run.wallSeconds < 30, "waited for the 60 s grace: \(run)")
        let pid = try #require(sandbox.lines("obedient.pid").first.flatMap { Int32($0) })
        #expect(!ProcessProbe.isAlive(pid))
    }

    /// Nothing stopped: the job script leaves the task's own exit code
    /// (128+N for a signal of its own), and stdin is /dev/null.
    @Test func aJobsExitCodeIsTheTasksOwn() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            executor: slurm
            tasks:
              three: { run: exit 3 }
              signalled: { run: kill -s USR1 $$ }
              reads: { run: 'if read -r line; then echo "read $line"; else echo "stdin empty"; fi' }
            """, timeout: .seconds(90))
        #expect(run.exitStatus == 1, "\(run)")
        let record = try sandbox.record()
        #expect(record.finished("three")?["exit_code"] as? Int == 3, "\(run)")
        #expect(record.finished("signalled")?["exit_code"] as? Int == 128 + Int(SIGUSR1), "\(String(describing: record.finished("signalled")))")
        #expect(record.task("reads")?["stdout"] as? String == "stdin empty", "\(run)")
        #expect(try SlurmTestCluster.jobs().isEmpty)
    }
}
