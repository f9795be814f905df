import Foundation
import Testing

extension RunEndToEndParallel {
    /// SPEC §8, issue 16 item 7: every numeric key at 0, 1, its largest
    /// accepted value and one beyond, run (not only validated) by the built
    /// binary. Beyond the bound: exit 2 and the message at file:line:column.
    /// Accepted: the run ends by itself with the expected exit status, no crash.
    /// The workflows are chosen so that even the largest values finish at
    /// once (huge timeouts on tasks that end at once, huge delays cut by the
    /// run's deadline).
    @Suite struct RunNumericBoundsSweepTests {
        struct Case: CustomStringConvertible, Sendable {
            var key: String
            var value: String
            var workflow: String
            /// Exit statuses an accepted value may end with; empty: refused (exit 2).
            var exits: Set<Int32>
            /// For a refused value: the diagnostic, after `workflow.yaml:LINE:COLUMN: error: `.
            var message = ""

            var description: String { "\(key): \(value)" }

            static func runs(_ key: String, _ value: String, exits: Set<Int32> = [0], _ workflow: String) -> Case {
                Case(key: key, value: value, workflow: workflow, exits: exits)
            }

            static func refused(_ key: String, _ value: String, _ message: String, _ workflow: String) -> Case {
                Case(key: key, value: value, workflow: workflow, exits: [], message: message)
            }
        }

        static func retries(_ n: String) -> String {
            "tasks:\n  t:\n    run: \"true\"\n    retries: \(n)\n"
        }
        /// A task that always fails, retried under a 1 s run deadline: the
        /// delay after backoff saturates at the deadline (exit 124) instead
        /// of overflowing.
        static func backoff(_ factor: String) -> String {
            "timeout: 1s\ntasks:\n  t:\n    run: exit 1\n    retries: 10000\n    retry_delay: 1ms\n    backoff: \(factor)\n"
        }
        static func retryDelay(_ delay: String) -> String {
            "timeout: 1s\ntasks:\n  t:\n    run: exit 1\n    retries: 1\n    retry_delay: \(delay)\n"
        }
        static func maxParallel(_ n: String) -> String {
            "max_parallel: \(n)\ntasks:\n  a: { run: \"true\" }\n  b: { run: \"true\" }\n"
        }
        static func concurrency(_ n: String) -> String {
            "groups:\n  g:\n    concurrency: \(n)\n    tasks:\n      a: { run: \"true\" }\n      b: { run: \"true\" }\n"
        }
        static func capacity(_ n: String) -> String {
            "semaphores:\n  db: \(n)\ntasks:\n  t:\n    run: \"true\"\n    semaphores: [db]\n"
        }
        static func weight(_ n: String) -> String {
            "semaphores:\n  db: 1000000\ntasks:\n  t:\n    run: \"true\"\n    semaphores: { db: \(n) }\n"
        }
        static func need(_ n: String) -> String {
            "tasks:\n  a: { run: \"true\" }\n  b: { run: \"true\" }\njoins:\n  j:\n    wait: [a, b]\n    need: \(n)\n"
        }
        static func range(_ low: String, _ high: String) -> String {
            "groups:\n  g:\n    foreach: {range: [\(low), \(high)]}\n    task:\n      sleep: 0s\n"
        }
        static func taskTimeout(_ d: String) -> String {
            "tasks:\n  t:\n    sleep: 0s\n    timeout: \(d)\n"
        }
        static func killGrace(_ d: String) -> String {
            "kill_grace: \(d)\ntasks:\n  t:\n    run: \"true\"\n"
        }
        /// A long sleep cut by the task's timeout: timed out, exit 1.
        static func sleep(_ d: String) -> String {
            "tasks:\n  t:\n    sleep: \(d)\n    timeout: 200ms\n"
        }
        static func runTimeout(_ d: String) -> String {
            "timeout: \(d)\ntasks:\n  t:\n    run: \"true\"\n"
        }
        static func groupTimeout(_ d: String) -> String {
            "groups:\n  g:\n    timeout: \(d)\n    tasks:\n      a: { run: \"true\" }\n"
        }
        static func joinTimeout(_ d: String) -> String {
            "tasks:\n  a: { run: \"true\" }\njoins:\n  j:\n    wait: [a]\n    timeout: \(d)\n"
        }

        static let cases: [Case] = [
            .runs("retries", "0", retries("0")),
            .runs("retries", "1", retries("1")),
            .runs("retries", "10000", retries("10000")),
            .refused("retries", "10001", "retries must be at most 10,000, found 10001", retries("10001")),
            .refused("retries", "99999999999999999999", "retries must be at most 10,000, found '99999999999999999999'", retries("99999999999999999999")),

            .refused("backoff", "0", "backoff must be at least 1, found 0", backoff("0")),
            .runs("backoff", "1", exits: [124], backoff("1")),
            .runs("backoff", "1000", exits: [124], backoff("1000")),
            .refused("backoff", "1000.5", "backoff must be at most 1000, found 1000.5", backoff("1000.5")),

            .runs("retry_delay", "0s", exits: [1], retryDelay("0s")),
            .runs("retry_delay", "1ms", exits: [1], retryDelay("1ms")),
            .runs("retry_delay", "8784h", exits: [124], retryDelay("8784h")),
            .refused("retry_delay", "8785h", "'8785h' is longer than a year in retry_delay", retryDelay("8785h")),

            .refused("max_parallel", "0", "max_parallel must be at least 1, found 0", maxParallel("0")),
            .runs("max_parallel", "1", maxParallel("1")),
            .runs("max_parallel", "1000000", maxParallel("1000000")),
            .refused("max_parallel", "1000001", "max_parallel must be at most 1,000,000, found 1000001", maxParallel("1000001")),

            .refused("concurrency", "0", "concurrency must be at least 1, found 0", concurrency("0")),
            .runs("concurrency", "1", concurrency("1")),
            .runs("concurrency", "1000000", concurrency("1000000")),
            .refused("concurrency", "1000001", "concurrency must be at most 1,000,000, found 1000001", concurrency("1000001")),

            .refused("semaphore capacity", "0", "the capacity of semaphore 'db' must be at least 1, found 0", capacity("0")),
            .runs("semaphore capacity", "1", capacity("1")),
            .runs("semaphore capacity", "1000000", capacity("1000000")),
            .refused("semaphore capacity", "1000001", "the capacity of semaphore 'db' must be at most 1,000,000, found 1000001", capacity("1000001")),

            .refused("semaphore weight", "0", "the weight of semaphore 'db' must be at least 1, found 0", weight("0")),
            .runs("semaphore weight", "1", weight("1")),
            .runs("semaphore weight", "1000000", weight("1000000")),
            .refused("semaphore weight", "1000001", "the weight of semaphore 'db' must be at most 1,000,000, found 1000001", weight("1000001")),

            .refused("need", "0", "need must be at least 1, found 0", need("0")),
            .runs("need", "1", need("1")),
            .runs("need", "2", need("2")),
            .refused("need", "3", "join 'j' needs 3 members to succeed but waits for only 2", need("3")),
            .refused("need", "1000001", "need must be at most 1,000,000, found 1000001", need("1000001")),

            .runs("range", "[0, 0]", range("0", "0")),
            .runs("range", "[1, 1]", range("1", "1")),
            .runs("range", "[-10^15, -10^15+1]", range("-1000000000000000", "-999999999999999")),
            .runs("range", "[10^15-1, 10^15]", range("999999999999999", "1000000000000000")),
            .refused("range", "[0, 10^15+1]", "the end of the range must be at most 1,000,000,000,000,000, found 1000000000000001", range("0", "1000000000000001")),
            .refused("range", "[-10^15-1, 0]", "the start of the range must be at least -1,000,000,000,000,000, found -1000000000000001", range("-1000000000000001", "0")),
            .runs("range", "100,000 items", range("1", "100000")),
            // The cap (10,000,000) is far past what a test runs; one past it is refused.
            .runs("range", "100,001 items", range("0", "100000")),
            .refused("range", "10,000,001 items", "the range [0, 10000000] has more than 10,000,000 items", range("0", "10000000")),

            .refused("timeout", "0s", "timeout must be longer than 0", taskTimeout("0s")),
            .runs("timeout", "1ms", exits: [0, 1], taskTimeout("1ms")),
            .runs("timeout", "1s", taskTimeout("1s")),
            .runs("timeout", "8784h", taskTimeout("8784h")),
            .refused("timeout", "8785h", "'8785h' is longer than a year in timeout", taskTimeout("8785h")),

            .runs("kill_grace", "0s", killGrace("0s")),
            .runs("kill_grace", "1s", killGrace("1s")),
            .runs("kill_grace", "8784h", killGrace("8784h")),
            // Arms the grace timer: the task is stopped at its timeout and leaves at SIGTERM.
            .runs("kill_grace", "8784h, stopping a task", exits: [1],
                  "kill_grace: 8784h\ntasks:\n  t:\n    run: sleep 30\n    timeout: 100ms\n"),
            .refused("kill_grace", "8785h", "'8785h' is longer than a year in kill_grace", killGrace("8785h")),

            .runs("sleep", "0s", exits: [0], sleep("0s")),
            .runs("sleep", "1ms", exits: [0], sleep("1ms")),
            .runs("sleep", "8784h", exits: [1], sleep("8784h")),
            .runs("sleep", "0s..8784h", exits: [0, 1], sleep("0s..8784h")),
            .refused("sleep", "8785h", "'8785h' is longer than a year in sleep", sleep("8785h")),

            .refused("run timeout", "0s", "timeout must be longer than 0", runTimeout("0s")),
            .runs("run timeout", "1s", runTimeout("1s")),
            .runs("run timeout", "8784h", runTimeout("8784h")),
            .refused("run timeout", "8785h", "'8785h' is longer than a year in timeout", runTimeout("8785h")),

            .runs("group timeout", "1s", groupTimeout("1s")),
            .runs("group timeout", "8784h", groupTimeout("8784h")),
            .refused("group timeout", "8785h", "'8785h' is longer than a year in timeout", groupTimeout("8785h")),

            .runs("join timeout", "1s", joinTimeout("1s")),
            .runs("join timeout", "8784h", joinTimeout("8784h")),
            .refused("join timeout", "8785h", "'8785h' is longer than a year in timeout", joinTimeout("8785h")),
        ]

        @Test(arguments: cases)
        func everyNumericKeyRunsAtItsBoundsAndIsRefusedBeyond(_ sweep: Case) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(sweep.workflow, timeout: .seconds(60))
            run.expectNoCrash()
            if sweep.exits.isEmpty {
                #expect(run.exitStatus == 2, "\(sweep)\n\(run)")
                let diagnostic = run.diagnostics.first { $0.hasSuffix(": error: " + sweep.message) }
                #expect(diagnostic != nil, "\(sweep): expected '\(sweep.message)'\n\(run)")
                // FILE:LINE:COLUMN.
                #expect(diagnostic?.range(of: #"workflow\.yaml:\d+:\d+: error: "#, options: .regularExpression) != nil, "\(diagnostic ?? "")")
            } else {
                #expect(run.exitStatus.map(sweep.exits.contains) == true, "\(sweep): expected exit \(sweep.exits.sorted())\n\(run)")
                #expect(run.wallSeconds < 50, "\(sweep) took \(run.wallSeconds) s")
            }
        }

        /// `http.expect`: 0 and 1 refused, 599 (the largest) runs against a
        /// server answering 599, 600 refused. (100 itself is accepted by
        /// validation; a server cannot answer a final 100.)
        @Test(arguments: [("0", Int32(2), "expect must be at least 100, found 0"), ("1", 2, "expect must be at least 100, found 1"),
                          ("200", 0, ""), ("599", 0, ""), ("600", 2, "expect must be an HTTP status between 100 and 599, found 600")])
        func httpExpectRunsAtItsBoundsAndIsRefusedBeyond(value: String, exit: Int32, message: String) throws {
            let sandbox = try RunSandbox()
            let server = try OneRequestHTTPServer(status: Int(value) ?? 200, timeout: .seconds(5))
            let run = try sandbox.run("tasks:\n  t: {http: {url: \"\(server.url)/\", expect: \(value)}}\n")
            run.expectNoCrash()
            #expect(run.exitStatus == exit, "\(run)")
            if exit == 2 { #expect(run.diagnostics.contains { $0.hasSuffix(": error: " + message) }, "\(run)") }
        }

        /// `--max-parallel` takes what `max_parallel` takes.
        @Test(arguments: [("0", Int32(2)), ("1", 0), ("1000000", 0), ("1000001", 2)])
        func theMaxParallelOptionHasTheKeysBounds(value: String, exit: Int32) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("tasks:\n  a: { run: \"true\" }\n", ["--max-parallel", value])
            run.expectNoCrash()
            #expect(run.exitStatus == exit, "\(run)")
            if exit == 2 { #expect(run.stderr.contains("--max-parallel must be at"), "\(run)") }
        }

        /// The issue's crash: `retries: 1100` with `retry_delay: 0s` on a
        /// failing task ended flowrun with SIGILL after ~1,000 attempts (a
        /// Double → Int conversion). Now every attempt runs and the task fails.
        @Test func elevenHundredRetriesWithNoDelayRunEveryAttemptAndFail() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  t:
                    run: exit 1
                    retries: 1100
                    retry_delay: 0s
                """, timeout: .seconds(120))
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.events("task_started", task: "t").count == 1101, "\(record.overview)")
            #expect(integer(record.finished("t")?["attempt"]) == 1101, "\(record.overview)")
            #expect(record.status("t") == "failed")
        }
    }
}
