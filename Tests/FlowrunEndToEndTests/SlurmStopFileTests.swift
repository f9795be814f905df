import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The attempt's `.stop` file (what flowrun asked a job before its
/// `scancel`), attacked: a watch's rerun, and a FIFO a task made there.
extension SlurmTests {
    /// A watch runs again with the same Slurm folder and attempt 1 again,
    /// so a task's job has the stem of the last run's. A change while the
    /// job ran stopped it, writing `TERM` to its `.stop` file; the next
    /// run's job read that file and exited 143 before its task started
    /// (the task failed without running, every time). Each attempt's
    /// leftover `.stop` and `.exit` are now removed before it is submitted.
    @Test func aWatchRunsAgainATaskWhoseSlurmJobItsSourcesChangeStopped() throws {
        let sandbox = try RunSandbox()
        let live = try watchOneSlurmTask(in: sandbox, running: #"cat "$SANDBOX/src.txt" >> "$SANDBOX/starts"; sleep 120"#)
        #expect(sandbox.waitFor("starts", timeout: .seconds(60)), "the first job never started the task")
        _ = try sandbox.directory.write("2\n", to: "src.txt")
        #expect(sandbox.waitFor("starts", lines: 2, timeout: .seconds(60)),
                "the second run's job did not start the task: \(sandbox.read("starts") ?? "")")
        #expect(sandbox.lines("starts") == ["1", "2"])
        live.signalGroup(SIGINT)
        let ended = live.finish()
        #expect(ended.exitStatus == 130, "\(ended)")
        #expect(poll(until: .seconds(30), every: .milliseconds(200)) { ((try? SlurmTestCluster.jobs()) ?? ["?"]).isEmpty },
                "\(SlurmTestCluster.leftovers())")
        #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
    }

    /// `flowrun watch` of one Slurm task `t` with `sources: [src.txt]`, `src.txt` holding `1`.
    func watchOneSlurmTask(in sandbox: RunSandbox, running script: String) throws -> LiveFlowrun {
        _ = try sandbox.directory.write("1\n", to: "src.txt")
        let workflow = try sandbox.write(workflow: """
            executor: slurm
            tasks:
              t:
                sources: [src.txt]
                run: \(script)
            """)
        return try LiveFlowrun(
            ["watch", workflow, "--log-dir", sandbox.logDirectory, "--output", "plain"],
            environment: sandbox.environment, directory: sandbox.path, hardTimeout: .seconds(150))
    }

    /// flowrun opened the `.stop` file for writing without O_NONBLOCK: a
    /// FIFO the task made at that path (`${FLOWRUN_OUTPUT%.output}.stop`)
    /// blocked the Slurm session's queue in open(2), and neither Ctrl-C nor
    /// a second one ended the run (measured: still running 25 s later). Now
    /// only a regular file is written there; the stop goes on with the
    /// `scancel` alone.
    @Test func aFifoATaskMadeAtItsStopFileDoesNotHangCtrlC() throws {
        let sandbox = try RunSandbox()
        let live = try sandbox.start("""
            executor: slurm
            kill_grace: 5s
            tasks:
              t:
                run: mkfifo "${FLOWRUN_OUTPUT%.output}.stop"; echo up > "$SANDBOX/ready"; sleep 120
            """, hardTimeout: .seconds(150))
        #expect(sandbox.waitFor("ready", timeout: .seconds(60)), "the task did not start")
        // Seen running by flowrun (its poll), so that Ctrl-C signals the job: the path with the `.stop` write.
        #expect(poll(until: .seconds(30), every: .milliseconds(100)) {
            let runs = (try? FileManager.default.contentsOfDirectory(atPath: sandbox.logDirectory)) ?? []
            return runs.contains { (ProcessProbe.text(sandbox.logDirectory + "/" + $0 + "/events.jsonl") ?? "").contains(#""state":"RUNNING""#) }
        }, "flowrun never saw the job running")
        live.signalGroup(SIGINT)
        let ended = live.finish()
        #expect(!ended.hung && ended.exitStatus == 130, "\(ended)")
        #expect(ended.wallSeconds < 60, "\(ended)")
        #expect(poll(until: .seconds(30), every: .milliseconds(200)) { ((try? SlurmTestCluster.jobs()) ?? ["?"]).isEmpty },
                "\(SlurmTestCluster.leftovers())")
        #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
    }

    /// The same stem again: the job appends to `$FLOWRUN_OUTPUT`, so a
    /// rerun that wrote no `k` still had the last run's `k=stale`. The
    /// leftover is removed with the `.stop` and `.exit`.
    @Test func aWatchsRerunHasNoOutputOfTheLastRun() throws {
        let sandbox = try RunSandbox()
        let live = try watchOneSlurmTask(in: sandbox, running: #"if [ "$(cat "$SANDBOX/src.txt")" = 1 ]; then echo "k=stale" >> "$FLOWRUN_OUTPUT"; fi"#)
        #expect(RunEndToEnd.WatchTests.waitForRuns(sandbox, 1, timeout: .seconds(60)), "the first run never finished")
        _ = try sandbox.directory.write("2\n", to: "src.txt")
        #expect(RunEndToEnd.WatchTests.waitForRuns(sandbox, 2, timeout: .seconds(60)), "no run after the change")
        let runs = RunEndToEnd.WatchTests.runs(sandbox)
        #expect(runs.first?.task("t")?["outputs"] as? [String: String] == ["k": "stale"], "the test proved nothing")
        let second = runs.count > 1 ? runs[1].task("t") : nil
        #expect(second?["status"] as? String == "succeeded", "\(String(describing: second))")
        let outputs: [String: String] = (second?["outputs"] as? [String: String]) ?? [:]
        #expect(outputs.isEmpty, "\(outputs)")
        live.signalGroup(SIGINT)
        let ended = live.finish()
        #expect(ended.exitStatus == 130, "\(ended)")
        #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
    }
}
