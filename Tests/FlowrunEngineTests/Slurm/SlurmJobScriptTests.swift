@testable import FlowrunEngine
import FlowrunModel
import FlowrunValues
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The job scripts (`SlurmJobScript`): their text, and the element script
/// run here by /bin/sh (dash on Debian) as slurmstepd runs it, signalled as
/// Slurm signals it (its own process only: Slurm signals the script's
/// process group, which the task is not in). On a real cluster: `SlurmTests`.
@Suite(.serialized) struct SlurmJobScriptTests {
    static func spec(_ command: [String], in folder: String, grace: Duration = .seconds(5)) -> SlurmTaskSpec {
        SlurmTaskSpec(
            command: command, scriptFile: nil, environment: [("WORD", "it's $fine")], workingDirectory: folder,
            files: SlurmFiles(stem: folder + "/t.1"), killGrace: grace)
    }

    @Test func theElementScriptQuotesEveryValueAndWritesTheExitFileWhole() throws {
        let spec = SlurmTaskSpec(
            command: ["/bin/sh", "-c", "echo 'it''s' $HOME"], scriptFile: nil,
            environment: [("GREETING", "a b; rm -rf /"), ("FLOWRUN_TASK", "t")], workingDirectory: "/work dir",
            files: SlurmFiles(stem: "/shared/slurm/000001-t.1"), killGrace: .milliseconds(2500))
        let script = SlurmJobScript.element(spec)
        #expect(script.contains("export GREETING='a b; rm -rf /'"), "\(script)")
        #expect(script.contains("cd '/work dir'"), "\(script)")
        #expect(script.contains(#"mv -f "$status_file.tmp" "$status_file""#), "\(script)")
        // Slurm's cancel after flowrun's kill is a TERM to the script's group: it must not kill `mv`.
        #expect(script.contains("finish() { trap '' TERM INT HUP QUIT; umask 077;"), "\(script)")
        // The task in a group of its own under timeout, with the grace; this shell waits for it.
        #expect(script.contains(#"exec "$flowrun_timeout" --kill-after=2.5s 0 /bin/sh -c 'echo '\''it'\'''\''s'\'' $HOME'"#), "\(script)")
        #expect(script.contains("\n) </dev/null >>\"$out\" 2>>\"$err\" &\n"), "\(script)")
        // The task's env is exported in the subshell that becomes timeout, after this shell found timeout.
        let found = try #require(script.range(of: "flowrun_timeout=$(command -v timeout)"))
        let opened = try #require(script.range(of: "\n(\nexport GREETING="))
        #expect(found.upperBound < opened.lowerBound, "\(script)")
        #expect(script.contains("trap 'stop TERM' TERM; trap 'stop INT' INT; trap 'stop HUP' HUP; trap 'stop QUIT' QUIT"), "\(script)")
        #expect(script.contains(#"while flowrun_stop=; wait "$flowrun_pid"; flowrun_status=$?; [ -n "$flowrun_stop" ]; do :; done"#), "\(script)")
        // A stop that came before the task's pid was known is applied once it is.
        #expect(script.contains(#"flowrun_pid=$!; [ -z "$flowrun_stop" ] || stop "$flowrun_stop""#), "\(script)")
        let job = SlurmJobScript.job(runID: "RUN", batchFolder: "/shared/slurm/s1", count: 3)
        #expect(job.contains(#"exec /bin/sh /shared/slurm/s1/"${SLURM_ARRAY_TASK_ID:-0}.sh""#), "\(job)")
    }

    @Test func theGraceIsSecondsToTheMillisecondAndNeverZero() {
        #expect(SlurmJobScript.graceText(.seconds(5)) == "5s")
        #expect(SlurmJobScript.graceText(.milliseconds(250)) == "0.25s")
        #expect(SlurmJobScript.graceText(.milliseconds(1005)) == "1.005s")
        // 0 would turn timeout's SIGKILL off.
        #expect(SlurmJobScript.graceText(.zero) == "0.001s")
    }

    @Test func theElementScriptRunsAndLeavesItsExitStatus() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let ended = try Self.run(Self.spec(["/bin/sh", "-c", "echo \"$WORD\"; echo oops >&2; exit 7"], in: folder), in: folder)
        #expect(ended == 7)
        #expect(try String(contentsOfFile: folder + "/t.1.exit", encoding: .utf8) == "7\n")
        #expect(try String(contentsOfFile: folder + "/t.1.out", encoding: .utf8) == "it's $fine\n")
        #expect(try String(contentsOfFile: folder + "/t.1.err", encoding: .utf8) == "oops\n")
        #expect(!FileManager.default.fileExists(atPath: folder + "/t.1.exit.tmp"))
    }

    /// Killed by a signal of its own: 128+N, as a shell says it.
    @Test func aTaskKilledByItsOwnSignalLeaves128PlusN() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(try Self.run(Self.spec(["/bin/sh", "-c", "kill -s USR1 $$"], in: folder), in: folder) == 128 + Int(SIGUSR1))
        #expect(try String(contentsOfFile: folder + "/t.1.exit", encoding: .utf8) == "\(128 + SIGUSR1)\n")
    }

    /// A task that ends on TERM ends at once: the grace is not waited for.
    @Test func aTaskThatEndsOnTermEndsAtOnce() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let started = ContinuousClock.now
        let ended = try Self.run(
            Self.spec(["/bin/sh", "-c", "echo $$ > \(folder)/task.pid; exec sleep 300"], in: folder, grace: .seconds(60)), in: folder,
            signal: SIGTERM)
        #expect(ended == 128 + Int(SIGTERM))
        #expect((ContinuousClock.now - started).seconds < 30)
    }

    /// A zombie left in the task's group is not a leftover to wait for.
    /// (Here its parent lives on outside the group and never reaps it; on a
    /// node it is an orphan whose init reaps it late: this VM's took 1–2 s,
    /// and every Slurm cancel waited for it, up to the grace; CI's load once
    /// made that 5 s.) Fails on a script that asks `kill -0` alone: it waits
    /// out the 60 s grace.
    @Test func aZombieLeftInTheTasksGroupIsNotWaitedFor() throws {
        let folder = try Self.folder()
        defer {
            if let text = try? String(contentsOfFile: folder + "/escaped.pid", encoding: .utf8),
               let escaped = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) { kill(escaped, SIGKILL) }
            try? FileManager.default.removeItem(atPath: folder)
        }
        // The task's shell starts one that forks the zombie-to-be (in the task's group), then
        // leaves the group (setsid) and sleeps without reaping it; the task says it started
        // once the zombie is one.
        let escaping = #"echo $$ > escaped.pid; sh -c 'echo $$ > zombie.pid' & exec setsid sleep 300"#
        let task = """
            cd \(folder); sh -c \(ShellQuoting.word(escaping)) &
            until [ -s zombie.pid ] && grep -q '^State:.Z' /proc/$(cat zombie.pid)/status 2>/dev/null; do sleep 0.01; done
            echo $$ > task.pid; exec sleep 300
            """
        let started = ContinuousClock.now
        let ended = try Self.run(Self.spec(["/bin/sh", "-c", task], in: folder, grace: .seconds(60)), in: folder, signal: SIGTERM)
        #expect(ended == 128 + Int(SIGTERM))
        #expect((ContinuousClock.now - started).seconds < 30)
        let zombie = try String(contentsOfFile: folder + "/zombie.pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let state = try String(contentsOfFile: "/proc/\(zombie)/status", encoding: .utf8)
        #expect(state.contains("State:\tZ"), "the zombie was reaped, so the test proved nothing: \(state)")
    }

    /// A stop Slurm dropped (its `scancel --signal` reached the node before
    /// slurmstepd started the script: 2 of 15 jobs signalled as squeue first
    /// said R, and CI saw a Ctrl-C leave such a job in squeue) is read from
    /// the `.stop` file flowrun writes first: the task does not start, and
    /// the exit status is the signal's. Each of the four signals flowrun
    /// stops with; anything else in the file is not a stop.
    @Test(arguments: [("TERM", 143), ("INT", 130), ("HUP", 129), ("QUIT", 131), ("KILL", 0), ("", 0)])
    func aStopAskedBeforeTheScriptRanIsReadFromItsFile(asked: String, status: Int32) throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try (asked + "\n").write(toFile: folder + "/t.1.stop", atomically: false, encoding: .utf8)
        let ended = try Self.run(Self.spec(["/bin/sh", "-c", "touch \(folder)/ran"], in: folder), in: folder)
        #expect(ended == status, "asked: \(asked)")
        #expect(FileManager.default.fileExists(atPath: folder + "/ran") == (status == 0), "asked: \(asked)")
    }

    /// A job with no stop asked (its `.stop` file absent, as for nearly
    /// every job) says nothing of it: the shell's "cannot open …stop: No
    /// such file" began every job's Slurm output, which flowrun reads for
    /// a job that leaves no exit file.
    @Test func aJobAskedNoStopSaysNothingOfItsStopFile() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let ended = try Self.run(Self.spec(["/bin/sh", "-c", "touch \(folder)/ran"], in: folder), in: folder)
        #expect(ended == 0)
        #expect(FileManager.default.fileExists(atPath: folder + "/ran"))
        let said = try String(contentsOfFile: folder + "/slurm.out", encoding: .utf8)
        #expect(said.isEmpty, "the job script said: \(said)")
    }

    // MARK: Helpers

    static func folder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("slurm-job-script-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Runs the element script with /bin/sh; with `signal`, sends it to the
    /// script (only) once the task has written `task.pid`. The exit status
    /// it wrote; killed, and a failure, past 60 s.
    static func run(_ spec: SlurmTaskSpec, in folder: String, signal: Int32? = nil) throws -> Int32 {
        #expect(SlurmSession.write(SlurmJobScript.element(spec), to: folder + "/0.sh") == nil)
        // posix_spawn and waitpid: Foundation's Process learns of the exit only through a run loop.
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup(folder + "/0.sh"), nil]
        defer { argv.forEach { free($0) } }
        // As slurmstepd starts it: no signal blocked or ignored (this process may block SIGCHLD,
        // for its reaper's signalfd, and a shell's `wait` would never wake).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        // Its stdout and stderr to `slurm.out`, as Slurm's `--output`.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, folder + "/slurm.out", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, environ)
        #expect(spawned == 0, "posix_spawn: \(spawned)")
        guard spawned == 0 else { return -1 }
        var status: Int32 = 0
        var reaped = false
        defer {
            // Nothing left behind by a failure: the script, and the task's group.
            if !reaped {
                kill(pid, SIGKILL)
                waitpid(pid, &status, WNOHANG)
                if let text = try? String(contentsOfFile: folder + "/task.pid", encoding: .utf8),
                   let task = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), getpgid(task) > 1 {
                    kill(-getpgid(task), SIGKILL)
                }
            }
        }
        if let signal {
            let ready = until(.seconds(60)) { FileManager.default.fileExists(atPath: folder + "/task.pid") }
            try #require(ready, "the task did not start")
            kill(pid, signal)
        }
        // Ended: its exit file written, and the script gone (reaped here, or by another suite's
        // child reaper in this process, which may wait for any child).
        let exitFile = folder + "/t.1.exit"
        reaped = until(.seconds(60)) {
            if waitpid(pid, &status, WNOHANG) == pid { return true }
            return FileManager.default.fileExists(atPath: exitFile) && !isAlive(pid)
        }
        try #require(reaped, "the job script did not end")
        let written = try String(contentsOfFile: exitFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return try #require(Int32(written), "exit file: \(written)")
    }

    /// Polls `condition` every 20 ms up to `timeout`.
    static func until(_ timeout: Duration, _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    /// Running: in /proc and not a zombie (a zombie waits for init to reap it).
    static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(close, offsetBy: 2)]
        return state != "Z" && state != "X"
    }
}
