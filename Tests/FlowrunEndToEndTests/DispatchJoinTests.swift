import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 4's "Done when" list (SPEC §4–§5) against the real binary: quorum
/// and deadline joins, a 1,000-task stress run under nested limits, and the
/// seed scenarios in `workflows/`. One test at a time, so timings measure flowrun.
@Suite(.serialized) enum DispatchEndToEnd {}

// MARK: - Helpers

enum DispatchSupport {
    /// `workflows/`, found from this file.
    static let workflowsFolder: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("workflows").path

    /// The `join_completed` event of `join`.
    static func joinCompleted(_ join: String, in record: RunRecordFiles) -> [String: Any]? {
        record.events.compactMap { $0 }.last { $0["event"] as? String == "join_completed" && $0["join"] as? String == join }
    }

    /// A join event's `report` as (name, value) pairs, in order.
    static func report(of event: [String: Any]?) -> [(name: String, value: String)] {
        (event?["report"] as? [[String: Any]] ?? []).map { ($0["name"] as? String ?? "?", $0["value"] as? String ?? "") }
    }

    /// Per-attempt running intervals from the engine's events: an attempt runs
    /// from `task_started` to the next `task_retrying` or `task_finished` of the task.
    static func attemptIntervals(_ record: RunRecordFiles) -> [(name: String, start: Double, end: Double)] {
        var open: [String: Double] = [:]
        var result: [(name: String, start: Double, end: Double)] = []
        for case let event? in record.events {
            guard let task = event["task"] as? String, let time = double(event["elapsed"]) else { continue }
            switch event["event"] as? String {
            case "task_started": open[task] = time
            case "task_retrying", "task_finished":
                if let start = open.removeValue(forKey: task) { result.append((task, start, time)) }
            default: break
            }
        }
        return result
    }
}

extension DispatchEndToEnd {
    @Suite(.serialized) struct DispatchJoinTests {
        // MARK: Quorum

        static let quorumWorkflow = """
            max_parallel: 8
            kill_grace: 2s
            tasks:
              fast-a:
                run: sleep 0.2; echo done-a
              fast-b:
                run: sleep 0.4; echo done-b
              slow-c:
                run: |
                  echo $$ > "$SANDBOX/slow-c.pid"
                  trap 'echo term >> "$SANDBOX/slow-c.term"; kill $child 2>/dev/null; exit 143' TERM
                  sleep 5 & child=$!
                  echo $child > "$SANDBOX/slow-c-sleep.pid"
                  wait $child
                  echo done-c
              slow-d:
                run: |
                  echo $$ > "$SANDBOX/slow-d.pid"
                  trap 'echo term >> "$SANDBOX/slow-d.term"; kill $child 2>/dev/null; exit 143' TERM
                  sleep 5 & child=$!
                  echo $child > "$SANDBOX/slow-d-sleep.pid"
                  wait $child
                  echo done-d
            joins:
              quorum:
                wait: [fast-a, fast-b, slow-c, slow-d]
                need: 2
            """

        @Test func quorumCompletesAtTheSecondWinnerAndKillsTheRest() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.quorumWorkflow, timeout: .seconds(20))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.wallSeconds < 3, "the slow members (5 s) should have been cancelled at ~0.4 s: \(run.wallSeconds) s")
            let record = try sandbox.record()
            let join = try #require(DispatchSupport.joinCompleted("quorum", in: record), "\(record.overview)")
            let elapsed = try #require(double(join["elapsed"]))
            #expect(elapsed >= 0.3 && elapsed <= 1.5, "join_completed at \(elapsed) s, expected ~0.4 s\n\(record.overview)")
            #expect(join["status"] as? String == "succeeded", "\(join)")
            #expect(integer(join["succeeded"]) == 2, "\(join)")

            for slow in ["slow-c", "slow-d"] {
                #expect(record.status(slow) == "cancelled", "\(slow): \(record.status(slow) ?? "nil")\n\(record.overview)")
                #expect(record.finished(slow)?["reason"] as? String == "join_settled", "\(record.finished(slow) ?? [:])")
                #expect(sandbox.exists("\(slow).term"), "\(slow) got no SIGTERM (its trap wrote no marker)")
                for file in ["\(slow).pid", "\(slow)-sleep.pid"] {
                    let pid = try #require(sandbox.pid(in: file), "no \(file)")
                    #expect(!ProcessProbe.isAlive(pid), "\(file) \(pid) survived: \(ProcessProbe.commandLine(of: pid))")
                }
            }
            #expect(record.status("fast-a") == "succeeded")
            #expect(record.status("fast-b") == "succeeded")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")

            // The report: exactly the two winners' stashes.
            let report = DispatchSupport.report(of: join)
            let nonEmpty = report.filter { !$0.value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
            #expect(nonEmpty.map(\.name).sorted() == ["fast-a.stdout", "fast-b.stdout"], "report: \(report)")
            #expect(Set(nonEmpty.map { $0.value.trimmingCharacters(in: .whitespacesAndNewlines) }) == ["done-a", "done-b"], "report: \(report)")
            // The reporter's block names the join and its count, at the moment it completed.
            #expect(run.stdout.contains("quorum") && run.stdout.contains("2/4"), "no join block with 2/4 in:\n\(run.stdout)")
        }

        /// A member that succeeds hands its slot on only after its join has
        /// heard of it: the join completing at the second winner cancels the
        /// members still waiting, and they never start (with max_parallel 2,
        /// the second winner's slot must not start `d` first).
        @Test func aQuorumNeverStartsTheWaitingMembersItCancels() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                max_parallel: 2
                tasks:
                  a: {run: "true"}
                  b: {run: "sleep 0.3"}
                  c: {run: "sleep 5"}
                  d: {run: "sleep 5"}
                  e: {run: "sleep 5"}
                joins:
                  quorum:
                    wait: [a, b, c, d, e]
                    need: 2
                """, timeout: .seconds(20))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("a") == "succeeded" && record.status("b") == "succeeded", "\(record.overview)")
            // c took a's slot before the join was complete; d and e never ran.
            #expect(record.names("task_started").sorted() == ["a", "b", "c"], "\(record.overview)")
            for member in ["c", "d", "e"] {
                #expect(record.status(member) == "cancelled", "\(member): \(record.overview)")
            }
        }

        /// Issue 4: "the join block shows exactly the two winners' stashes" — the
        /// default report (every member's stash) should not list the members the
        /// quorum cancelled, which have no stash.
        @Test func quorumJoinBlockShowsOnlyTheWinnersStashes() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.quorumWorkflow, timeout: .seconds(20))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let join = try #require(DispatchSupport.joinCompleted("quorum", in: record), "\(record.overview)")
            let report = DispatchSupport.report(of: join)
            #expect(report.map(\.name) == ["fast-a.stdout", "fast-b.stdout"], "event report: \(report)")
            #expect(!run.stdout.contains("slow-c.stdout") && !run.stdout.contains("slow-d.stdout"),
                    "the join block lists the cancelled members' (empty) stashes:\n\(run.stdout)")
        }

        // MARK: Deadline

        static func deadlineWorkflow(onTimeout: String) -> String {
            """
            kill_grace: 2s
            tasks:
              quick:
                run: sleep 0.2; echo quick-done
              slow:
                run: |
                  echo $$ > "$SANDBOX/slow.pid"
                  sleep 10
                  echo slow-done
              after:
                needs: [deadline]
                run: echo ${{ joins.deadline.timed_out }} > "$SANDBOX/timed_out"
            joins:
              deadline:
                wait: [quick, slow]
                need: all
                timeout: 1s
                on_timeout: \(onTimeout)
            """
        }

        @Test func deadlineFiresWithThePartialStashAndContinues() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.deadlineWorkflow(onTimeout: "continue"), timeout: .seconds(20))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.wallSeconds < 4, "took \(run.wallSeconds) s")
            let record = try sandbox.record()
            let join = try #require(DispatchSupport.joinCompleted("deadline", in: record), "\(record.overview)")
            let elapsed = try #require(double(join["elapsed"]))
            #expect(elapsed >= 0.9 && elapsed <= 2, "join fired at \(elapsed) s, expected ~1 s")
            #expect(join["timed_out"] as? Bool == true, "\(join)")
            #expect(join["missing"] as? [String] == ["slow"], "\(join)")
            let report = DispatchSupport.report(of: join)
            let nonEmpty = report.filter { !$0.value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
            #expect(nonEmpty.count == 1 && nonEmpty.first?.value.contains("quick-done") == true, "report: \(report)")
            #expect(sandbox.read("timed_out")?.trimmingCharacters(in: .whitespacesAndNewlines) == "true",
                    "downstream saw joins.deadline.timed_out = \(sandbox.read("timed_out") ?? "nil (after did not run)")")
            #expect(record.status("after") == "succeeded")
            #expect(record.status("slow") == "cancelled", "\(record.status("slow") ?? "nil")")
            #expect(record.status("quick") == "succeeded")
            // slow writes its pid first thing: no pid means the check below would prove nothing.
            let pid = try #require(sandbox.pid(in: "slow.pid"), "slow never wrote its pid")
            #expect(!ProcessProbe.isAlive(pid), "slow's shell \(pid) survived")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
            #expect(run.stdout.contains("slow"), "the join block should name the missing member:\n\(run.stdout)")
        }

        @Test func deadlineWithOnTimeoutFailSkipsDependents() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.deadlineWorkflow(onTimeout: "fail"), timeout: .seconds(20))
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            #expect(run.wallSeconds < 4, "took \(run.wallSeconds) s")
            let record = try sandbox.record()
            let join = try #require(DispatchSupport.joinCompleted("deadline", in: record), "\(record.overview)")
            let elapsed = try #require(double(join["elapsed"]))
            #expect(elapsed >= 0.9 && elapsed <= 2, "join fired at \(elapsed) s, expected ~1 s")
            #expect(join["status"] as? String == "timed_out", "\(join)")
            #expect(join["timed_out"] as? Bool == true, "\(join)")
            #expect(record.status("after") == "skipped", "\(record.status("after") ?? "nil")\n\(record.overview)")
            #expect(!sandbox.exists("timed_out"), "the dependent ran")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        // MARK: Seed scenarios

        @Test func downloadsRunsTenAtATimeAndReportsAllHundred() throws {
            let sandbox = try RunSandbox()
            let workflow = DispatchSupport.workflowsFolder + "/downloads.yaml"
            let run = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path,
                                            environment: sandbox.environment, timeout: .seconds(40))
            #expect(!run.timedOut, "downloads.yaml did not finish in 40 s")
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let attempts = DispatchSupport.attemptIntervals(record).filter { $0.name.hasPrefix("file-") }
            #expect(attempts.count >= 100, "\(attempts.count) attempts of file-N")
            let most = maximumOverlap(attempts.map { ($0.start, $0.end) })
            #expect(most <= 10, "\(most) downloads ran at once (limit 10)")
            #expect(most >= 8, "only \(most) ran at once: the limit of 10 is not used")
            let join = try #require(DispatchSupport.joinCompleted("all-downloaded", in: record), "\(record.overview)")
            let report = DispatchSupport.report(of: join)
            let results = try #require(report.first { $0.name == "downloads.results" }?.value, "report: \(report.map(\.name))")
            let array = try #require(try JSONSerialization.jsonObject(with: Data(results.utf8)) as? [Any], "not a JSON array: \(results.prefix(300))")
            #expect(array.count == 100, "\(array.count) results")
            #expect(record.status("report") == "succeeded")
            #expect(record.stdout("report")?.contains("100 of 100") == true, "\(record.stdout("report") ?? "nil")")
            // The join completes before its dependent starts.
            let joinTime = double(join["elapsed"]) ?? .infinity
            let reportStart = double(record.events("task_started", task: "report").first?["elapsed"]) ?? -1
            #expect(joinTime <= reportStart, "join at \(joinTime), report started at \(reportStart)")
        }

        /// skip-chain.yaml: the failed migration skips deploy → smoke-test →
        /// announce, the independent branch and the `when:` tasks still run; exit 1.
        @Test func skipChainSkipsTheDependentsOfAFailure() throws {
            let sandbox = try RunSandbox()
            let workflow = DispatchSupport.workflowsFolder + "/skip-chain.yaml"
            let run = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path,
                                            environment: sandbox.environment, timeout: .seconds(20))
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            let expected = ["fetch-schema": "succeeded", "build-docs": "succeeded", "migrate": "failed",
                            "deploy": "skipped", "smoke-test": "skipped", "announce": "skipped",
                            "rollback": "succeeded", "report": "succeeded"]
            for (task, status) in expected {
                #expect(record.status(task) == status, "\(task): \(record.status(task) ?? "nil"), expected \(status)")
            }
            #expect(record.names("task_started").filter { ["deploy", "smoke-test", "announce"].contains($0) }.isEmpty)
        }

        @Test func pageReadyTimesOutAtTwoSecondsWithPartialResults() throws {
            let sandbox = try RunSandbox()
            let workflow = DispatchSupport.workflowsFolder + "/page-ready.yaml"
            let run = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path,
                                            environment: sandbox.environment, timeout: .seconds(20))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let join = try #require(DispatchSupport.joinCompleted("page-ready", in: record), "\(record.overview)")
            let elapsed = try #require(double(join["elapsed"]))
            #expect(elapsed >= 1.9 && elapsed <= 3, "join fired at \(elapsed) s, expected ~2 s")
            #expect(join["timed_out"] as? Bool == true, "\(join)")
            #expect(join["missing"] as? [String] == ["lead-track"], "\(join)")
            let report = Dictionary(DispatchSupport.report(of: join).map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
            #expect(report["last-recording.outputs.found"] == "false", "\(report)")
            #expect(report["original-track.outputs.path"] == "cache/original.mp3", "\(report)")
            #expect((report["lead-track.outputs.path"] ?? "") == "", "\(report)")
            #expect(record.status("lead-track") == "cancelled")
            #expect(record.status("open-page") == "succeeded")
            #expect(record.status("note-slow-network") == "succeeded")
            #expect(record.stdout("open-page")?.contains("timed out: true") == true, "\(record.stdout("open-page") ?? "nil")")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }
    }
}
