import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `executor: slurm` against a real one-node cluster (SPEC §12): each test
/// runs the built binary on a workflow, the cluster is started once for
/// the suite and stopped after it. Ahead of the parallel tests, as
/// `RunEndToEnd`: queued behind them, its first test started when they were
/// done (~130 s in CI) and it ended the whole run ~20 s after `RunEndToEnd`.
@Suite(.serialized, .aheadOfTheParallelTests, .slurmCluster) struct SlurmTests {
    /// `sbatch` and `squeue` first on PATH: each call is logged, then the real one runs.
    static func countingTools(in sandbox: RunSandbox) throws -> [String: String] {
        let bin = sandbox.path + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for tool in ["sbatch", "squeue", "scancel"] {
            let real = try RunSandbox.tool(tool)
            // scancel's line also says the stops flowrun had asked for in the jobs' `.stop` files by then.
            let stops = tool == "scancel" ? " stops=$(find \(sandbox.path) -name '*.stop' -exec cat {} + 2>/dev/null | tr '\\n' ,)" : ""
            let script = "#!/bin/sh\necho \"$(date +%s.%N) $*\(stops)\" >> \(sandbox.path)/\(tool).calls\nexec \(real) \"$@\"\n"
            _ = FileManager.default.createFile(atPath: "\(bin)/\(tool)", contents: Data(script.utf8), attributes: [.posixPermissions: 0o755])
        }
        return ["PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
    }

    @Test func aTaskRunsAsAJobWithItsOutputsLogAndExitStatus() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            executor: slurm
            tasks:
              make:
                run: |
                  echo "made on $(hostname) as $FLOWRUN_TASK"
                  echo "count=42" >> "$FLOWRUN_OUTPUT"
                  echo "a warning" >&2
              use:
                needs: [make]
                run: echo "got ${{ tasks.make.outputs.count }} from ${{ tasks.make.stdout }}"
              broken:
                run: echo "about to fail" >&2; exit 3
            """, timeout: .seconds(90))
        #expect(run.exitStatus == 1, "\(run)")
        let record = try sandbox.record()
        #expect(record.finished("make")?["status"] as? String == "succeeded", "\(run)")
        let use = try #require(record.task("use"), "\(run)")
        #expect((use["stdout"] as? String)?.hasPrefix("got 42 from made on") == true, "\(use)")
        let broken = try #require(record.finished("broken"))
        #expect(broken["exit_code"] as? Int == 3 && broken["reason"] as? String == "exit 3", "\(broken)")
        // The console's failure tail comes from the log the job's stderr went to.
        #expect(run.stdout.contains("| about to fail"), "\(run)")
        let log = try String(contentsOfFile: record.directory + "/logs/000/000000-make.log", encoding: .utf8)
        #expect(log.contains("made on") && log.contains("a warning"), "\(log)")
        // The job script is kept in the record, and the live view heard of the job.
        #expect(FileManager.default.fileExists(atPath: record.directory + "/slurm/s1/job.sh"))
        let queued = record.events("task_slurm", task: "make").contains { $0["state"] as? String == "PENDING" && $0["slurm_job"] != nil }
        #expect(queued, "\(record.eventLines)")
        #expect(run.stdout.contains("slurm    make queued (slurm job "), "\(run)")
        #expect(try SlurmTestCluster.jobs().isEmpty)
    }

    /// A job's output goes through the same sink as a local task's
    /// (`AttemptOutput`): its `::progress::` lines become task_progress
    /// events while it runs and stay out of the stash, and `--stream` shows
    /// its lines. The job goes on only once the event is in events.jsonl.
    @Test func aJobsProgressLinesAreEventsAndItsLinesAreStreamed() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            executor: slurm
            tasks:
              steps:
                run: |
                  d=$(dirname "$FLOWRUN_OUTPUT"); while [ ! -f "$d/events.jsonl" ] && [ "$d" != / ]; do d=$(dirname "$d"); done
                  echo first
                  echo "::progress::40"
                  n=0; until grep -q 'progress.:40[,}]' "$d/events.jsonl"; do n=$((n+1)); [ $n -gt 600 ] && exit 9; sleep 0.1; done
                  echo second
            """, ["--stream"], timeout: .seconds(120))
        #expect(run.exitStatus == 0, "\(run)")
        let record = try sandbox.record()
        #expect(record.events("task_progress", task: "steps").compactMap { integer($0["progress"]) } == [40], "\(record.eventLines)")
        #expect(record.stdout("steps") == "first\nsecond", "\(record.overview)")
        #expect(run.stdout.contains("steps | first") && run.stdout.contains("steps | second"), "\(run)")
        #expect(try SlurmTestCluster.jobs().isEmpty)
    }

    @Test func aFanOutOf200MembersIsOneJobArrayPolledByOneSqueueAtATime() throws {
        let sandbox = try RunSandbox()
        let tools = try Self.countingTools(in: sandbox)
        let run = try sandbox.run("""
            executor: slurm
            groups:
              square:
                concurrency: 100
                foreach: {range: [1, 200]}
                task:
                  run: echo "n=${{ item }}" >> "$FLOWRUN_OUTPUT"
            tasks:
              total:
                executor: local
                needs: [square]
                run: echo '${{ groups.square.results }}' | grep -o '"n":"[0-9]*"' | wc -l
            """, timeout: .seconds(120), environment: tools)
        #expect(run.exitStatus == 0, "\(run)")
        let record = try sandbox.record()
        let total = try #require(record.task("total"), "\(run)")
        #expect(total["stdout"] as? String == "200", "\(total)")
        let sbatch = sandbox.lines("sbatch.calls")
        #expect(sbatch.count == 1, "\(sbatch)")
        #expect(sbatch.first?.contains("--array=0-199%100") == true, "\(sbatch)")
        #expect(sbatch.first?.contains("--job-name=flowrun-\(record.runID)") == true, "\(sbatch)")
        // At most one squeue a second (one more for the poll in flight at the end).
        let polls = sandbox.lines("squeue.calls").count
        #expect(polls >= 1 && Double(polls) <= run.wallSeconds + 1, "\(polls) squeue calls in \(run.wallSeconds) s")
        #expect(try SlurmTestCluster.jobs().isEmpty)
    }

    /// The controller busy for the first `sbatch` and the first `squeue`:
    /// both are asked again, and the task succeeds.
    @Test func aBusyControllerIsRetriedNotATaskFailure() throws {
        let sandbox = try RunSandbox()
        var tools = try Self.countingTools(in: sandbox)
        for tool in ["sbatch", "squeue"] {
            let real = try RunSandbox.tool(tool)
            let script = """
                #!/bin/sh
                echo "$(date +%s.%N) $*" >> \(sandbox.path)/\(tool).calls
                if [ ! -e \(sandbox.path)/\(tool).failed ]; then
                  touch \(sandbox.path)/\(tool).failed
                  echo "\(tool): error: Socket timed out on send/recv operation" >&2
                  exit 1
                fi
                exec \(real) "$@"

                """
            _ = FileManager.default.createFile(atPath: "\(sandbox.path)/bin/\(tool)", contents: Data(script.utf8), attributes: [.posixPermissions: 0o755])
        }
        tools["SANDBOX"] = sandbox.path
        let run = try sandbox.run("""
            tasks:
              a: { executor: slurm, run: echo done }
            """, timeout: .seconds(90), environment: tools)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(sandbox.lines("sbatch.calls").count == 2, "\(sandbox.lines("sbatch.calls"))")
        #expect(sandbox.lines("squeue.calls").count >= 2, "\(sandbox.lines("squeue.calls"))")
        #expect(try sandbox.record().task("a")?["stdout"] as? String == "done", "\(run)")
    }

    @Test func aJoinsQuorumScancelsItsLosers() throws {
        let sandbox = try RunSandbox()
        let tools = try Self.countingTools(in: sandbox)
        let run = try sandbox.run("""
            executor: slurm
            kill_grace: 2s
            tasks:
              fast: { run: echo first }
              slow-a: { run: sleep 300 }
              slow-b: { run: sleep 300 }
            joins:
              first: { wait: [fast, slow-a, slow-b], need: 1 }
            """, timeout: .seconds(90), environment: tools)
        #expect(run.exitStatus == 0, "\(run)")
        let record = try sandbox.record()
        #expect(record.finished("slow-a")?["status"] as? String == "cancelled", "\(run)")
        #expect(record.finished("slow-b")?["status"] as? String == "cancelled", "\(run)")
        // Both losers in one scancel.
        let cancels = sandbox.lines("scancel.calls")
        #expect(cancels.first.map { $0.contains("--signal=TERM") && $0.split(separator: " ").count >= 5 } == true, "\(cancels)")
        // Each asked in its job's `.stop` file before the scancel: a signal Slurm drops (the job's
        // script not started yet) is read there by the script.
        #expect(cancels.first?.hasSuffix(" stops=TERM,TERM,") == true, "\(cancels)")
        #expect(try SlurmTestCluster.until(.seconds(5)) { try SlurmTestCluster.jobs().isEmpty }, "\(SlurmTestCluster.leftovers())")
    }

    @Test func failFastCancelsTheOtherJobs() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            executor: slurm
            fail_fast: true
            kill_grace: 1s
            tasks:
              broken: { run: exit 4 }
              long-a: { run: sleep 300 }
              long-b: { run: sleep 300 }
            """, timeout: .seconds(90))
        #expect(run.exitStatus == 1, "\(run)")
        let record = try sandbox.record()
        #expect(record.finished("broken")?["exit_code"] as? Int == 4, "\(run)")
        #expect(record.finished("long-a")?["status"] as? String == "cancelled", "\(run)")
        #expect(record.finished("long-b")?["status"] as? String == "cancelled", "\(run)")
        #expect(try SlurmTestCluster.until(.seconds(5)) { try SlurmTestCluster.jobs().isEmpty }, "\(SlurmTestCluster.leftovers())")
    }

    @Test func aTimeoutStopsTheJob() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            executor: slurm
            kill_grace: 1s
            tasks:
              slow:
                timeout: 3s
                run: echo started; sleep 300
            """, timeout: .seconds(90))
        #expect(run.exitStatus == 1, "\(run)")
        let finished = try #require(try sandbox.record().finished("slow"))
        #expect(finished["status"] as? String == "timed_out", "\(finished)")
        #expect(try SlurmTestCluster.until(.seconds(5)) { try SlurmTestCluster.jobs().isEmpty }, "\(SlurmTestCluster.leftovers())")
    }

    /// Ctrl-C, `kill -9` of flowrun (the supervisor), `kill -9` of the
    /// engine: nothing of the run is left in squeue within 5 s.
    @Test(arguments: ["ctrl-c", "kill -9 flowrun", "kill -9 engine"])
    func stoppingFlowrunLeavesNoJob(how: String) throws {
        let sandbox = try RunSandbox()
        let flowrun = try sandbox.start("""
            executor: slurm
            kill_grace: 2s
            groups:
              wait:
                foreach: {range: [1, 5]}
                task: { run: sleep 300 }
            tasks:
              alone: { run: sleep 300 }
            """, hardTimeout: .seconds(90))
        #expect(try SlurmTestCluster.until(.seconds(60)) { try SlurmTestCluster.runningJobs().count == 6 }, "the jobs did not start")
        switch how {
        case "ctrl-c": flowrun.signalGroup(SIGINT)
        case "kill -9 flowrun": kill(flowrun.pid, SIGKILL)
        default: kill(try #require(flowrun.engine()), SIGKILL)
        }
        let gone = try SlurmTestCluster.until(.seconds(5)) { try SlurmTestCluster.jobs().isEmpty }
        let leftovers = gone ? "" : SlurmTestCluster.leftovers()
        let ended = flowrun.finish()
        #expect(gone, "\(how): \(leftovers)\n--- flowrun: \(ended)\n--- events: \(runFolders(in: sandbox.logDirectory).map { ProcessProbe.text(sandbox.logDirectory + "/" + $0 + "/events.jsonl") ?? "" })")
        #expect(!ended.hung, "\(ended)")
    }

    /// Ctrl-C with fan-out members still queued behind the array's `%C`:
    /// they are cancelled outright, none starts during the running ones'
    /// grace (a graceful `scancel --signal=TERM` freed the slots and the
    /// queued elements took them), and the run ends within the grace.
    @Test func ctrlCStartsNoQueuedMemberDuringTheGrace() throws {
        let sandbox = try RunSandbox()
        let flowrun = try sandbox.start("""
            executor: slurm
            kill_grace: 3s
            groups:
              g:
                foreach: {range: [1, 6]}
                concurrency: 2
                task: { run: "touch started-${{ item }}; sleep 300" }
            """, hardTimeout: .seconds(90))
        #expect(try SlurmTestCluster.until(.seconds(60)) { try SlurmTestCluster.runningJobs().count == 2 }, "the jobs did not start")
        usleep(1_500_000)  // flowrun has polled them running
        flowrun.signalGroup(SIGINT)
        #expect(try SlurmTestCluster.until(.seconds(5)) { try SlurmTestCluster.jobs().isEmpty }, "\(SlurmTestCluster.leftovers())")
        let ended = flowrun.finish()
        #expect(!ended.hung && ended.exitStatus == 130, "\(ended)")
        let started = try FileManager.default.contentsOfDirectory(atPath: sandbox.path).filter { $0.hasPrefix("started-") }.sorted()
        #expect(started == ["started-1", "started-2"], "members started after Ctrl-C: \(started)")
    }

    /// A second Ctrl-C cancels every job at once; flowrun then ends as soon
    /// as squeue no longer lists them (a cancelled queued job leaves it at
    /// once), not after three more polls and a `sacct` (5.6–9 s before).
    /// The running task, which ignores TERM, goes with its job: flowrun's
    /// `scancel --signal=QUIT` has its job script SIGKILL it, where Slurm's
    /// own cancel would wait the 30 s grace (or KillWait).
    @Test func aSecondCtrlCEndsTheRunPromptly() throws {
        let sandbox = try RunSandbox()
        let flowrun = try sandbox.start("""
            executor: slurm
            kill_grace: 30s
            tasks:
              a: { run: "trap '' TERM; echo $$ > \\"$SANDBOX/a.pid\\"; sleep 300" }
            groups:
              g:
                foreach: {range: [1, 4]}
                concurrency: 1
                task: { run: "trap '' TERM; sleep 300" }
            """, hardTimeout: .seconds(90))
        // Three members queued behind %1: cancelled, they leave squeue at once.
        #expect(try SlurmTestCluster.until(.seconds(60)) { try SlurmTestCluster.runningJobs().count == 2 }, "the jobs did not start")
        usleep(1_500_000)
        flowrun.signalGroup(SIGINT)
        usleep(10_000)
        flowrun.signalGroup(SIGINT)
        // When the jobs leave squeue is Slurm's pace (slower on a loaded machine), but well inside the
        // tasks' 30 s kill_grace and Slurm's 30 s KillWait; flowrun must then end within a poll or two.
        #expect(try SlurmTestCluster.until(.seconds(20)) { try SlurmTestCluster.jobs().isEmpty }, "\(SlurmTestCluster.leftovers())")
        let ended = flowrun.wait(upTo: .seconds(4))
        #expect(ended?.exitStatus == 130, "still running 4 s after squeue listed no job of the run: \(String(describing: ended))")
        let task = try #require(sandbox.lines("a.pid").first.flatMap { Int32($0) })
        #expect(SlurmTestCluster.until(.seconds(5)) { !ProcessProbe.isAlive(task) }, "the TERM-ignoring task outlived its job")
        _ = flowrun.finish()
    }

    /// The engine stopped while a job runs, the job ends, the engine is
    /// killed: `resume` reads the job's exit file and does not run it again.
    @Test func resumeCountsAJobThatEndedAfterTheEngineDiedAsFinished() throws {
        let sandbox = try RunSandbox()
        let flowrun = try sandbox.start("""
            tasks:
              job:
                executor: slurm
                run: echo ran >> "$SANDBOX/job-runs"; sleep 2; echo finished
              here:
                run: '[ -e "$SANDBOX/second" ] && exit 0; touch "$SANDBOX/second"; sleep 300'
            """, hardTimeout: .seconds(90))
        #expect(SlurmTestCluster.until(.seconds(60)) { sandbox.lines("job-runs").count == 1 }, "the job did not start")
        let engine = try #require(flowrun.engine())
        kill(engine, SIGSTOP)
        let slurmFolder = sandbox.logDirectory + "/" + (runFolders(in: sandbox.logDirectory).first ?? "") + "/slurm"
        let exitWritten = SlurmTestCluster.until(.seconds(30)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: slurmFolder)) ?? []).contains { $0.hasSuffix(".exit") }
        }
        #expect(exitWritten, "the job wrote no exit file in \(slurmFolder)")
        kill(engine, SIGKILL)
        let ended = flowrun.finish()
        #expect(ended.exitStatus == 137, "\(ended)")
        let resumed = try FlowrunBinary.run(
            ["resume", "--log-dir", sandbox.logDirectory, "--output", "plain"], in: sandbox.path, environment: sandbox.environment,
            timeout: .seconds(60))
        #expect(resumed.exitStatus == 0, "\(resumed)")
        #expect(sandbox.lines("job-runs").count == 1, "the job ran again: \(resumed)")
        #expect(try SlurmTestCluster.jobs().isEmpty)
    }

    @Test func aNodeFailureIsTheReason() throws {
        let sandbox = try RunSandbox()
        let node = SlurmTestCluster.node
        let flowrun = try sandbox.start("""
            executor: slurm
            tasks:
              doomed: { run: sleep 300 }
            """, hardTimeout: .seconds(90))
        defer { SlurmTestCluster.restore(node: node) }
        #expect(try SlurmTestCluster.until(.seconds(60)) { try SlurmTestCluster.runningJobs().count == 1 }, "the job did not start")
        try SlurmTestCluster.command([try RunSandbox.tool("scontrol"), "update", "nodename=\(node)", "state=down", "reason=test"])
        let ended = flowrun.finish()
        #expect(ended.exitStatus == 1, "\(ended)")
        let finished = try #require(try sandbox.record().finished("doomed"))
        #expect(finished["reason"] as? String == "slurm: NODE_FAIL", "\(finished)")
        #expect(ended.stdout.contains("slurm: NODE_FAIL"), "\(ended)")
    }
}

/// What needs no cluster: the keys, the dry run, a missing sbatch.
@Suite struct SlurmKeysTests {
    @Test func unknownSlurmKeysAndSlurmOnSleepAreRefusedAtTheirLine() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            slurm:
              partitoin: batch
            tasks:
              nap:
                executor: slurm
                sleep: 1s
            """)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.contains("workflow.yaml:2:3: error: unknown key 'partitoin' in slurm (did you mean 'partition'?)"), "\(run)")
        #expect(run.stderr.contains("workflow.yaml:5:15: error: task 'nap' is a sleep: task"), "\(run)")
    }

    @Test func aGroupsExecutorReachesItsHTTPMemberAndIsRefusedThere() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            groups:
              remote:
                executor: slurm
                tasks:
                  ping: { http: { url: "http://localhost:1/" } }
            """)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.contains("workflow.yaml:3:15: error: task 'ping' is a http: task, which runs inside flowrun and cannot be a Slurm job (from group 'remote')"), "\(run)")
    }

    @Test func secretsAndSlurmAreRefusedTogether() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            secrets: [TOKEN]
            tasks:
              a: { executor: slurm, run: echo hi }
            """)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.contains("workflow.yaml:3:18: error: secrets cannot reach Slurm jobs"), "\(run)")
    }

    /// SPEC §13 on Slurm: declared resources become `--cpus-per-task` and
    /// `--mem` (MiB, rounded up), this machine's capacity does not refuse
    /// them, and a service (whose probe and dependents are this machine's)
    /// cannot be a job.
    @Test func resourcesBecomeSbatchFlagsAndServicesStayLocal() throws {
        let sandbox = try RunSandbox()
        let workflow = """
            capacity: { cpus: 1, memory: 1G }
            tasks:
              big:
                executor: slurm
                resources: { cpus: 2.5, memory: 1.5G }
                run: echo hi
            """
        let text = try sandbox.run(workflow, ["--dry-run"])
        #expect(text.exitStatus == 0, "\(text)")
        #expect(text.stdout.contains("sbatch --parsable --cpus-per-task=3 --mem=1536M"), "\(text)")
        let service = try sandbox.run("""
            tasks:
              db:
                executor: slurm
                service: true
                run: sleep 100
            """)
        #expect(service.exitStatus == 2, "\(service)")
        #expect(service.stderr.contains("workflow.yaml:3:15: error: task 'db' is a service, which runs beside flowrun until the run ends and cannot be a Slurm job"), "\(service)")
        let fileWide = try sandbox.run("""
            executor: slurm
            tasks:
              db: { service: true, run: sleep 100 }
            """, ["--dry-run"])
        #expect(fileWide.exitStatus == 0 && !fileWide.stdout.contains("sbatch"), "\(fileWide)")
    }

    @Test func theDryRunShowsTheSbatchArguments() throws {
        let sandbox = try RunSandbox()
        let workflow = """
            executor: slurm
            slurm: { partition: batch, account: proj42, qos: normal, options: ["--constraint=avx2"] }
            groups:
              align:
                concurrency: 50
                foreach: [a, b, c]
                task:
                  timeout: 2h
                  run: echo ${{ item }}
            tasks:
              here: { sleep: 1s }
            """
        let text = try sandbox.run(workflow, ["--dry-run"])
        #expect(text.exitStatus == 0, "\(text)")
        #expect(text.stdout.contains("executor:  slurm: sbatch --parsable --partition=batch --account=proj42 --qos=normal --time=0-02:00:00 --constraint=avx2 --array=0-2%50"), "\(text)")
        #expect(!text.stdout.contains("here  [task]\n      sleep:     1s\n      executor"), "\(text)")
        let json = try sandbox.run(workflow, ["--dry-run"], output: "json")
        #expect(json.stdout.contains(#""executor" : "slurm""#) && json.stdout.contains(#""--array=0-2%50""#), "\(json)")
    }

    @Test func aMissingSbatchIsAnErrorNamingIt() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            tasks:
              a:
                executor: slurm
                run: echo hi
            """, environment: ["PATH": sandbox.path])
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.contains("workflow.yaml:3:15: error: executor: slurm needs 'sbatch', which is not on PATH"), "\(run)")
    }
}

extension SlurmTestCluster {
    /// The node back up after a test took it down (it may be back already: ReturnToService=2).
    static func restore(node: String) {
        _ = try? command(["/usr/bin/scontrol", "update", "nodename=\(node)", "state=resume"])
        _ = until(.seconds(30)) { (try? command(["/usr/bin/sinfo", "-h", "-o", "%t"]).output.hasPrefix("idle")) ?? false }
    }
}
