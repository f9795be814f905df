import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `flowrun watch` with Slurm jobs (found attacking the `.stop` file).
extension SlurmTests {
    /// A watch runs again with the same Slurm folder and attempt 1 again,
    /// so a task's job has the stem of the last run's. A change while the
    /// job ran stopped it, writing `TERM` to its `.stop` file; the next
    /// run's job read that file and exited 143 before its task started
    /// (the task failed without running, every time). Each attempt's
    /// leftover `.stop` and `.exit` are now removed before it is submitted.
    @Test func aWatchRunsAgainATaskWhoseSlurmJobItsSourcesChangeStopped() throws {
        let sandbox = try RunSandbox()
        _ = try sandbox.directory.write("1\n", to: "src.txt")
        let workflow = try sandbox.write(workflow: """
            executor: slurm
            tasks:
              t:
                sources: [src.txt]
                run: cat "$SANDBOX/src.txt" >> "$SANDBOX/starts"; sleep 120
            """)
        let live = try LiveFlowrun(
            ["watch", workflow, "--log-dir", sandbox.logDirectory, "--output", "plain"],
            environment: sandbox.environment, directory: sandbox.path, hardTimeout: .seconds(150))
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
}
