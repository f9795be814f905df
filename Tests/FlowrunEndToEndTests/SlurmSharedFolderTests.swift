import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What another user can do to a run's Slurm jobs through their files, and
/// what a job's process gets that a local task's does not (found attacking
/// the Slurm executor from outside).
extension SlurmTests {
    /// A `slurm.shared_dir` that another user may write into without the
    /// sticky bit (a group-writable project scratch folder) let them rename
    /// flowrun's `flowrun-RUN/` away and put their own in its place, with an
    /// exit file saying 0 and outputs of their choosing: flowrun read them by
    /// path, so a job that failed "succeeded" with forged outputs, and a job
    /// script written there could be edited before Slurm ran it. Such a
    /// folder is now refused as the record's own folders are; a sticky one
    /// (like /tmp) is accepted.
    @Test func aSharedDirAnotherUserCouldWriteIsRefusedAStickyOneIsNot() throws {
        let sandbox = try RunSandbox()
        let open = sandbox.path + "/open-scratch"
        let sticky = sandbox.path + "/sticky-scratch"
        for (folder, mode) in [(open, 0o777), (sticky, 0o1777)] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            chmod(folder, mode_t(mode))
        }
        func workflow(_ shared: String) -> String {
            """
            executor: slurm
            slurm:
              shared_dir: \(shared)
            tasks:
              a:
                run: echo "k=v" >> "$FLOWRUN_OUTPUT"; echo ran
            """
        }
        let refused = try sandbox.run(workflow(open), timeout: .seconds(90))
        #expect(refused.exitStatus == 1, "\(refused)")
        let reason = try sandbox.record().finished("a")?["reason"] as? String ?? ""
        #expect(reason.contains("slurm.shared_dir") && reason.contains("without the sticky bit"), "\(reason) \(refused)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: open).isEmpty, "flowrun made something in a folder others can swap")
        #expect(try SlurmTestCluster.jobs().isEmpty)

        let accepted = try sandbox.run(workflow(sticky), timeout: .seconds(90))
        #expect(accepted.exitStatus == 0, "\(accepted)")
        let made = try FileManager.default.contentsOfDirectory(atPath: sticky)
        #expect(made.count == 1 && made[0].hasPrefix("flowrun-"), "\(made)")
        var info = stat()
        #expect(stat(sticky + "/" + (made.first ?? ""), &info) == 0 && info.st_mode & 0o7777 == 0o700)
    }

    /// The job script set `umask 077` for flowrun's own files and left it
    /// for the task: every file a task on Slurm made (`> result.sam`) was
    /// `0600`, where the same task run locally makes it with flowrun's
    /// umask. Now the task runs under the umask the job was submitted with,
    /// and flowrun's files in `slurm/` (its `$FLOWRUN_OUTPUT` too) stay `0600`.
    @Test func aJobRunsUnderTheUmaskALocalTaskGetsWhileItsFilesStayPrivate() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            tasks:
              here:
                run: umask
              there:
                executor: slurm
                run: umask; echo "k=v" >> "$FLOWRUN_OUTPUT"
            """, timeout: .seconds(90))
        #expect(run.exitStatus == 0, "\(run)")
        let record = try sandbox.record()
        let here = try #require(record.task("here")?["stdout"] as? String, "\(run)")
        #expect(record.task("there")?["stdout"] as? String == here, "\(run)")
        let slurm = record.directory + "/slurm"
        for name in try FileManager.default.contentsOfDirectory(atPath: slurm) {
            var info = stat()
            #expect(lstat(slurm + "/" + name, &info) == 0)
            if info.st_mode & S_IFMT == S_IFREG {
                #expect(info.st_mode & 0o077 == 0, "\(name) is \(String(info.st_mode & 0o7777, radix: 8))")
            }
        }
    }

    /// An `sbatch` that never answers (a hung controller, a wrapper that
    /// waits): Ctrl-C, and then a second one, left flowrun waiting for ever
    /// for the job id ("cancelled when its id comes"), with nothing on the
    /// console. Now an sbatch whose every attempt was stopped is killed
    /// after kill_grace (at once for a kill), and any Slurm command is
    /// killed after 60 s without an answer.
    @Test func ctrlCWhileSbatchHangsEndsTheRun() throws {
        let sandbox = try RunSandbox()
        let bin = sandbox.path + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let script = "#!/bin/sh\necho $$ > \(sandbox.path)/sbatch.pid\nexec sleep 300\n"
        _ = FileManager.default.createFile(atPath: bin + "/sbatch", contents: Data(script.utf8), attributes: [.posixPermissions: 0o755])
        let path = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let flowrun = try sandbox.start("""
            executor: slurm
            kill_grace: 1s
            tasks:
              a: { run: echo hi }
            """, hardTimeout: .seconds(40), wrapper: ["/usr/bin/env", "PATH=\(path)"])
        let started = SlurmTestCluster.until(.seconds(20)) { FileManager.default.fileExists(atPath: sandbox.path + "/sbatch.pid") }
        #expect(started, "sbatch was not called")
        usleep(300_000)
        flowrun.signalGroup(SIGINT)
        let ended = flowrun.wait(upTo: .seconds(15)) ?? flowrun.finish()
        #expect(!ended.hung && ended.wallSeconds < 30, "\(ended)")
        #expect(ended.exitStatus == 130, "\(ended)")
        let pid = Int32((try? String(contentsOfFile: sandbox.path + "/sbatch.pid", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        #expect(pid > 0 && SlurmTestCluster.until(.seconds(5)) { kill(pid, 0) != 0 }, "the hung sbatch \(pid) is still there")
    }

    /// An item holding a NUL byte: a local member fails (no process can be
    /// given it), but the Slurm member's job script carried it inside
    /// quotes, the shell dropped it, and the task ran with `ab` for `a<NUL>b`.
    /// Now the Slurm member fails as the local one does.
    @Test func anItemWithANulByteFailsOnSlurmAsLocally() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            tasks:
              items:
                run: printf 'a\\000b\\nc\\n'
            groups:
              there:
                needs: [items]
                executor: slurm
                foreach: ${{ tasks.items.stdout }}
                task:
                  run: printf '%s' "$FLOWRUN_ITEM"
            """, timeout: .seconds(90))
        #expect(run.exitStatus == 1, "\(run)")
        let record = try sandbox.record()
        let first = try #require(record.finished("there[0]"), "\(run)")
        #expect(first["status"] as? String == "failed" && (first["reason"] as? String ?? "").contains("NUL byte"), "\(first)")
        #expect(record.finished("there[1]")?["status"] as? String == "succeeded", "\(run)")
        #expect(try SlurmTestCluster.jobs().isEmpty)
    }

    /// Each Slurm member kept its log's file open from its first output to
    /// its end, and members on Slurm are not admitted by descriptors as
    /// local ones are: a 200-member fan-out under `ulimit -n 64` failed its
    /// members with "Too many open files", then could not even run squeue or
    /// scancel, and hung (SIGTERM included). Now a member's log is reopened
    /// at each poll that brings output, and let go after it.
    @Test func aBigFanOutOnSlurmFitsInAFewDescriptors() throws {
        let sandbox = try RunSandbox()
        let ended = try sandbox.run(wrapped: [try RunSandbox.tool("prlimit"), "--nofile=64:64"], """
            executor: slurm
            groups:
              g:
                foreach: {range: [1, 200]}
                task:
                  run: echo "line of ${{ item }}"; sleep 3; echo "n=${{ item }}" >> "$FLOWRUN_OUTPUT"
            tasks:
              total:
                executor: local
                needs: [g]
                run: echo '${{ groups.g.results }}' | grep -o '"n":"[0-9]*"' | wc -l
            """, timeout: .seconds(120))
        let stdout = (try? String(contentsOfFile: sandbox.file("stdout"), encoding: .utf8)) ?? ""
        #expect(ended.exitStatus == 0 && !ended.timedOut, "\(ended) \(stdout.suffix(2000))")
        #expect(!stdout.contains("Too many open files"), "\(stdout.suffix(2000))")
        #expect(try SlurmTestCluster.jobs().isEmpty)
    }
}
