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
        /// from 64 always run. Two limits at a time (`onLanes`): each run is
        /// its own flowrun under its own limit, and nothing here is timed
        /// but the 60 s hang guard.
        @Test func everyLimitFrom8To64EndsWithoutAHangOrACrash() async throws {
            try await onLanes(2, [8, 12, 16, 20, 24, 28, 32, 40, 48, 64]) { limit in
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

        /// Issue 32.10 (`fd.yaml`): 40 `run:`, 20 `http:` and 20 `sleep:`
        /// members with `max_parallel: 50` under limits 32 to 64 failed
        /// tasks instead of making them wait: `http:` members with
        /// "Couldn't connect to server" (libcurl's word for no socket),
        /// others for their log, the record for its pack and index. Now every
        /// task succeeds, or the run stops naming the limit; never a task
        /// failed for want of a descriptor, and the record is whole. Two
        /// limits at a time, as above; the server answers both runs.
        @Test func shortDescriptorsMakeTasksWaitNeverFailThem() async throws {
            let server = try ManyRequestHTTPServer()
            try await onLanes(2, [32, 36, 40, 48, 56, 64]) { limit in
                let sandbox = try RunSandbox()
                let outcome = try sandbox.run(wrapped: try Self.prlimit(limit), """
                    max_parallel: 50
                    groups:
                      p:
                        foreach: { range: [1, 40] }
                        task: { run: "echo p${{ item }}; sleep 0.2" }
                      h:
                        foreach: { range: [1, 20] }
                        task: { http: { url: "\(server.url)" } }
                      s:
                        foreach: { range: [1, 20] }
                        task: { sleep: 0.3s }

                    """, timeout: .seconds(60))
                let stderr = sandbox.read("stderr") ?? ""
                let context = "limit \(limit): \(outcome)\n\(stderr.suffix(2000))\n\((sandbox.read("stdout") ?? "").suffix(1500))"
                #expect(!outcome.timedOut && outcome.signal == nil, "\(context)")
                #expect(!stderr.contains("Too many open files") && !stderr.contains("Couldn't connect"), "\(context)")
                #expect(!stderr.contains("the run record is incomplete"), "\(context)")
                if stderr.hasPrefix("flowrun: the file descriptor limit is \(limit)") { return }  // refused at once: fine
                let record = try sandbox.record()
                if outcome.exitStatus == 0 {
                    #expect(integer((record.summary["counts"] as? [String: Any])?["succeeded"]) == 80, "\(context)\n\(record.summary)")
                } else {
                    #expect(outcome.exitStatus == 1 && stderr.contains("flowrun: out of file descriptors") && stderr.contains("(ulimit -n)"), "\(context)")
                    #expect(record.summary["stopped_by"] as? String == "descriptors", "\(context)\n\(record.summary)")
                }
                // No task failed for any reason but the limit named as such.
                for name in (0..<40).map({ "p[\($0)]" }) + (0..<20).map({ "h[\($0)]" }) + (0..<20).map({ "s[\($0)]" }) {
                    guard record.status(name) == "failed" else { continue }
                    let reason = record.finished(name)?["reason"] as? String
                    #expect(reason == "no file descriptor left (ulimit -n \(limit))", "\(name): \(reason ?? "no reason")\n\(context)")
                }
                #expect(!stderr.contains("cannot write") && !stderr.contains("cannot create"), "\(context)")
            }
            #expect(server.requests > 0)
        }

        /// 40 `http:` members hang on a server that never answers, each
        /// holding a socket; those that do not fit beside them wait, with no
        /// task process running to free any (a request may hang for
        /// minutes). The run fails at once (exit 1) instead of waiting: stderr
        /// names the limit and `ulimit -n`, a member that found no room failed
        /// with the reason, the hanging members are cancelled as on any
        /// failure under fail_fast, `late` never runs, and summary.json says
        /// `stopped_by: descriptors`.
        @Test func descriptorsThatRunOutMidRunFailTheRunSayingWhy() throws {
            let listener = try TCPListener()  // listens, never accepts: connections hang
            let sandbox = try RunSandbox()
            // 52: what flowrun holds before any task (22 since the supervisor's last-words link for Slurm) and
            // its margin fit; the 40 hanging sockets do not.
            let outcome = try sandbox.run(wrapped: try Self.prlimit(52), """
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
            #expect(stderr.contains("flowrun: out of file descriptors: a task could not get its pipes or socket while no task process ran to free any; flowrun may have 52 open (ulimit -n)"), "\(stderr)")
            let record = try sandbox.record()
            #expect(record.summary["stopped_by"] as? String == "descriptors", "\(record.summary)")
            #expect(record.status("late") != "succeeded", "\(record.overview)")
            let members = (1...40).map { record.status("hang[\($0 - 1)]") }
            let reasons = (1...40).compactMap { record.finished("hang[\($0 - 1)]")?["reason"] as? String }
            #expect(reasons.contains("no file descriptor left (ulimit -n 52)"), "\(reasons)")
            #expect(!reasons.contains { $0.contains("connect") }, "a member failed for want of a socket as if the server were down: \(reasons)")
            #expect(members.allSatisfy { $0 == "failed" || $0 == "cancelled" }, "\(members)")
            #expect(members.contains("cancelled"), "no hanging member was ended by the run's stop: \(members)")
            withExtendedLifetime(listener) {}
        }
    }
}
