import Foundation
import Testing

extension RunEndToEndParallel {
    /// The last lines a failed task printed, repeated under its `FAILED`
    /// line and in `task_finished`'s `log_tail`: each cut to 500 characters,
    /// saying how much more the log holds, which keeps the line whole.
    @Suite struct FailureTailTests {
        @Test func aLongLineInAFailedTasksTailIsCutAndTheLogKeepsItWhole() throws {
            let sandbox = try RunSandbox()
            // 30,000 NUL bytes on one line (the tail reads the log's last 64 KiB): escaped, 120,000 characters in the console before.
            let workflow = """
                tasks:
                  noisy: { run: "echo before; head -c 30000 /dev/zero; echo; echo after; exit 3" }
                """
            let run = try sandbox.run(workflow, output: "plain")
            #expect(run.exitStatus == 1, "\(run)")
            let longest = run.stdout.split(separator: "\n").map(\.utf8.count).max() ?? 0
            #expect(longest < 2_500, "a console line of \(longest) bytes")
            #expect(run.stdout.contains("    | before") && run.stdout.contains("    | after"), "\(run.stdout.prefix(3_000))")
            #expect(run.stdout.contains(" more bytes; the whole line is in the log)"), "\(run.stdout.prefix(3_000))")

            let json = try sandbox.run(workflow, output: "json")
            let finished = json.stdout.split(separator: "\n").first { $0.contains("\"task_finished\"") }.map(String.init) ?? ""
            #expect(finished.contains("\"log_tail\"") && finished.utf8.count < 5_000, "task_finished is \(finished.utf8.count) bytes")

            let logs = try FlowrunBinary.run(["logs", "--log-dir", sandbox.logDirectory, "latest", "noisy"], in: sandbox.path, environment: sandbox.environment)
            #expect(logs.exitStatus == 0, "\(logs)")
            #expect(logs.stdout.utf8.count > 30_000, "the log lost the long line: \(logs.stdout.utf8.count) bytes")
        }
    }
}
