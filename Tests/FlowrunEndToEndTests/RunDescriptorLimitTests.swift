import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// Issue 32.10: a tiny descriptor limit (`prlimit --nofile=N:N`) never
    /// hangs or crashes flowrun. Under what a run needs, it is refused at
    /// once, naming the limit and `ulimit -n`; at or over it, a 3,000-member
    /// fan-out runs every member; descriptors that run out mid-run fail the
    /// run, saying why, and end what runs as any failure would.
    @Suite struct RunDescriptorLimitTests {
        static let fanOut = """
            groups:
              fan:
                foreach: { range: [1, 3000] }
                task: { run: "echo member ${{ item }}" }

            """

        static func prlimit(_ limit: Int) throws -> [String] {
            [try RunSandbox.tool("prlimit"), "--nofile=\(limit):\(limit)"]
        }

        /// 8 and 12 used to die of SIGILL (Dispatch's event loop found no
        /// descriptor); 16 and 24 crawled at 5 s a member. Every one now ends
        /// within seconds, one of two ways: refused at once (exit 1, the
        /// limit and `ulimit -n` named, no record), or every one of the 3,000
        /// members run. Which, depends on how many descriptors flowrun found
        /// open (the test runner may leak some): under 24 always refused,
        /// from 64 always run.
        @Test func everyLimitFrom8To64EndsWithoutAHangOrACrash() throws {
            for limit in [8, 12, 16, 20, 24, 28, 32, 40, 48, 64] {
                let sandbox = try RunSandbox()
                let outcome = try sandbox.run(wrapped: try Self.prlimit(limit), Self.fanOut, timeout: .seconds(60))
                let stderr = sandbox.read("stderr") ?? ""
                let context = "limit \(limit): \(outcome)\n\(stderr.suffix(1500))\n\((sandbox.read("stdout") ?? "").suffix(800))"
                #expect(!outcome.timedOut, "hung: \(context)")
                #expect(outcome.signal == nil && (outcome.exitStatus ?? 0) < 128, "crashed: \(context)")
                let refused = stderr.hasPrefix("flowrun: the file descriptor limit is \(limit) (ulimit -n, the hard limit included) and ")
                if limit < 24 || refused {
                    #expect(refused && outcome.exitStatus == 1, "\(context)")
                    #expect(stderr.contains("raise it, e.g. ulimit -n 1024\n"), "\(context)")
                    #expect(runFolders(in: sandbox.logDirectory).isEmpty, "a refused run made a record: \(context)")
                }
                if limit >= 64 || !refused {
                    #expect(outcome.exitStatus == 0, "\(context)")
                    let record = try sandbox.record()
                    #expect(integer((record.summary["counts"] as? [String: Any])?["succeeded"]) == 3000,
                            "limit \(limit): \(record.summary["counts"] ?? "no counts")")
                }
            }
        }

        /// 40 `http:` members hang on a server that never answers, each
        /// holding a socket (those that found none failed at once); the
        /// descriptors left run out, and `late`, the only task with a
        /// process, finds none for its pipes with no task process running to
        /// free any. The run fails at once (exit 1) instead of waiting: stderr
        /// names the limit and `ulimit -n`, `late` failed with the reason, the
        /// hanging members are cancelled as on any failure under fail_fast,
        /// and summary.json says `stopped_by: descriptors`.
        @Test func descriptorsThatRunOutMidRunFailTheRunSayingWhy() throws {
            let listener = try TCPListener()  // listens, never accepts: connections hang
            let sandbox = try RunSandbox()
            let outcome = try sandbox.run(wrapped: try Self.prlimit(48), """
                max_parallel: 60
                groups:
                  hang:
                    foreach: { range: [1, 40] }
                    task: { http: { url: "http://127.0.0.1:\(listener.port)/" } }
                tasks:
                  gate: { sleep: 2s }
                  late: { needs: [gate], run: echo late }

                """, timeout: .seconds(30))
            let stderr = sandbox.read("stderr") ?? ""
            #expect(!outcome.timedOut && outcome.exitStatus == 1, "\(outcome)\n\(stderr)\n\((sandbox.read("stdout") ?? "").suffix(2000))")
            #expect(outcome.wallSeconds < 10, "the run did not stop at once: \(outcome.wallSeconds) s")
            #expect(stderr.contains("flowrun: out of file descriptors: a task could not get its pipes while no task process ran to free any; flowrun may have 48 open (ulimit -n)"), "\(stderr)")
            let record = try sandbox.record()
            #expect(record.summary["stopped_by"] as? String == "descriptors", "\(record.summary)")
            #expect(record.status("late") == "failed", "\(record.overview)")
            #expect(record.finished("late")?["reason"] as? String == "no file descriptor left (ulimit -n 48)", "\(record.overview)")
            let members = (1...40).map { record.status("hang[\($0 - 1)]") }
            #expect(members.allSatisfy { $0 == "failed" || $0 == "cancelled" }, "\(members)")
            #expect(members.contains("cancelled"), "no hanging member was ended by the run's stop: \(members)")
            withExtendedLifetime(listener) {}
        }
    }
}
