import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The one-node Slurm cluster the Slurm suite runs on
/// (`scripts/slurm-test-cluster.sh`): started once before the suite's
/// first test and stopped after its last (`SlurmClusterScope`), so no
/// slurmctld or slurmd outlives the test process. A missing Slurm or munge
/// fails the suite with the tool's name; it is never skipped.
enum SlurmTestCluster {
    static let script: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/slurm-test-cluster.sh").path
    /// State, spool, logs and pid files (the script stops a cluster left here, or by the config, first).
    static let folder = "/tmp/flowrun-slurm-tests"

    /// Many CPUs on one node: a fan-out's elements start at once, as on a cluster.
    static func start() throws {
        let outcome = try command(["/bin/bash", script, "start", folder], environment: ["SLURM_TEST_CPUS": "256"], timeout: .seconds(60))
        guard outcome.status == 0 else {
            throw FlowrunBinaryError("the test cluster did not start (\(outcome.status)): \(outcome.output)")
        }
    }

    static func stop() {
        _ = try? command(["/bin/bash", script, "stop", folder], timeout: .seconds(30))
    }

    /// This node's name, as Slurm knows it.
    static var node: String {
        (try? command(["/usr/bin/hostname", "-s"]).output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? "localhost"
    }

    /// Every job in the cluster (`1234`, `1234_5`): only the suite's runs use it.
    static func jobs() throws -> [String] {
        let outcome = try command([try RunSandbox.tool("squeue"), "--noheader", "--array", "--format=%i"])
        guard outcome.status == 0 else { throw FlowrunBinaryError("squeue failed: \(outcome.output)") }
        return outcome.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The jobs left, and for each what Slurm says of it and the lines of
    /// the cluster's logs that name it: what a failure says, so that a job
    /// that stayed on a loaded CI machine can be told apart afterwards
    /// (the cluster's folder goes with the suite).
    static func leftovers() -> String {
        let left = (try? jobs()) ?? []
        guard !left.isEmpty else { return "no job left (gone after the wait)" }
        var report = "jobs left: \(left)"
        for job in left.prefix(3) {
            if let scontrol = try? RunSandbox.tool("scontrol"), let shown = try? command([scontrol, "show", "job", job]) {
                report += "\n--- scontrol show job \(job):\n" + shown.output
            }
            let number = job.split(separator: "_").first.map(String.init) ?? job
            for log in ["ctld.log", "d.log"] {
                let lines = (try? String(contentsOfFile: folder + "/log/" + log, encoding: .utf8))?
                    .split(separator: "\n").filter { $0.contains(number) }.suffix(25) ?? []
                report += "\n--- \(log) lines naming \(number):\n" + lines.joined(separator: "\n")
            }
        }
        return report
    }

    /// Jobs running now.
    static func runningJobs() throws -> [String] {
        let outcome = try command([try RunSandbox.tool("squeue"), "--noheader", "--array", "--states=RUNNING", "--format=%i"])
        return outcome.output.split(separator: "\n").map(String.init)
    }

    /// Waits until `condition` holds (polling every 100 ms), up to `timeout`; true if it did.
    static func until(_ timeout: Duration, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            usleep(100_000)
        }
        return try condition()
    }

    struct Outcome {
        var status: Int32
        var output: String
    }

    /// Runs a command to its end (stdout and stderr together), killed at `timeout`.
    @discardableResult
    static func command(_ argv: [String], environment: [String: String] = [:], timeout: Duration = .seconds(30)) throws -> Outcome {
        let scratch = try TemporaryDirectory(prefix: "flowrun-slurm-command")
        let outputPath = scratch.path + "/output"
        var full = ProcessInfo.processInfo.environment
        full.merge(environment) { _, new in new }
        let outcome = try ChildProcess.run(
            executable: argv[0], arguments: Array(argv.dropFirst()), environment: full.map { "\($0.key)=\($0.value)" },
            stdoutPath: outputPath, stderrPath: outputPath, timeout: timeout, launcher: nil)
        let output = FileManager.default.contents(atPath: outputPath).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return Outcome(status: outcome.exitStatus ?? -1, output: output)
    }
}

/// Starts the test cluster around a suite, and stops it after (trait: `.slurmCluster`).
struct SlurmClusterScope: SuiteTrait, TestScoping {
    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try SlurmTestCluster.start()
        defer { SlurmTestCluster.stop() }
        try await function()
    }
}

extension Trait where Self == SlurmClusterScope {
    static var slurmCluster: Self { SlurmClusterScope() }
}
