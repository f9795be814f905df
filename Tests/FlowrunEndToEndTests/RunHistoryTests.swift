import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// Day two (SPEC §9): `flowrun runs`, `show` and `logs` read run records
    /// — finished, failed and live ones; RUN as an id, a prefix or the
    /// latest; `latest`; pruning old records at run start.
    @Suite struct RunHistoryTests {
        /// A run that fails: a task printing an escape sequence then exiting 3,
        /// a task skipped behind it, a fan-out group a join waits for, and two
        /// members whose names give their logs the same readable part (`m a/b`, `m a_b`).
        static let failing = """
            tasks:
              build: {run: "echo building"}
              test: {needs: [build], run: "echo testing; printf 'bad \\\\033[31mred\\\\n' >&2; exit 3"}
              deploy: {needs: [test], run: "echo deploying"}
            groups:
              fetch:
                foreach: [x, y, z]
                task: {run: 'echo "got $FLOWRUN_ITEM"'}
              pair:
                foreach: [a/b, a_b]
                task: {name: 'm ${{ item }}', run: 'echo "item $FLOWRUN_ITEM"'}
            joins:
              fetched:
                wait: [fetch]
            """

        static let succeeding = "tasks:\n  only: {run: 'echo fine'}\n"

        /// `flowrun ARGS --log-dir RECORD` in the sandbox.
        static func flowrun(_ arguments: [String], _ sandbox: RunSandbox) throws -> FlowrunRun {
            try FlowrunBinary.run(arguments + ["--log-dir", sandbox.logDirectory], in: sandbox.path, environment: sandbox.environment)
        }

        /// Runs `text` to completion; the new run's id.
        static func record(_ text: String, in sandbox: RunSandbox, name: String = "workflow.yaml", extra: [String] = [],
                           sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
            let before = Set(runFolders(in: sandbox.logDirectory))
            let workflow = try sandbox.write(workflow: text, to: name)
            let run = try FlowrunBinary.run(sandbox.arguments(workflow, extra), in: sandbox.path, environment: sandbox.environment)
            run.expectNoCrash(sourceLocation: sourceLocation)
            let made = Set(runFolders(in: sandbox.logDirectory)).subtracting(before)
            return try #require(made.count == 1 ? made.first : nil, "one new run folder expected\n\(run)", sourceLocation: sourceLocation)
        }

        static func json(_ text: String) -> Any? {
            try? JSONSerialization.jsonObject(with: Data(text.utf8))
        }

        // MARK: Finished and failed runs

        @Test func runsListsFinishedAndFailedRunsNewestFirst() throws {
            let sandbox = try RunSandbox()
            let passed = try Self.record(Self.succeeding, in: sandbox, name: "ok.yaml")
            let failed = try Self.record(Self.failing, in: sandbox, name: "bad.yaml")
            let text = try Self.flowrun(["runs"], sandbox)
            #expect(text.exitStatus == 0, "\(text)")
            let lines = text.stdout.split(separator: "\n").map(String.init)
            try #require(lines.count == 3, "\(text)")
            #expect(lines[0].hasPrefix("RUN ") && lines[0].contains("OUTCOME"), "\(text)")
            #expect(lines[1].hasPrefix(failed) && lines[1].contains(" failed ") && lines[1].contains("6 succeeded, 1 failed, 1 skipped"), "\(text)")
            #expect(lines[2].hasPrefix(passed) && lines[2].contains(" succeeded ") && lines[2].hasSuffix("1 succeeded"), "\(text)")

            let json = try Self.flowrun(["runs", "--output", "json"], sandbox)
            let runs = try #require(Self.json(json.stdout) as? [[String: Any]], "\(json)")
            #expect(runs.map { $0["run_id"] as? String } == [failed, passed], "\(json)")
            #expect(runs.map { $0["outcome"] as? String } == ["failed", "succeeded"], "\(json)")
            #expect(runs.map { integer($0["exit_code"]) } == [1, 0], "\(json)")
            #expect(runs[0]["file"] as? String == sandbox.file("bad.yaml"), "\(json)")
            #expect(integer((runs[0]["counts"] as? [String: Any])?["failed"]) == 1, "\(json)")
            #expect((runs[0]["started"] as? String)?.hasSuffix("Z") == true, "\(json)")

            let one = try Self.flowrun(["runs", "-n", "1"], sandbox)
            #expect(one.stdout.split(separator: "\n").count == 2 && one.stdout.contains(failed), "\(one)")
        }

        @Test func showTellsStatusesJoinBlocksAndFailuresWithTheirLastLines() throws {
            let sandbox = try RunSandbox()
            let id = try Self.record(Self.failing, in: sandbox)
            let show = try Self.flowrun(["show"], sandbox)
            #expect(show.exitStatus == 0, "\(show)")
            let text = show.stdout
            #expect(text.hasPrefix("run       \(id)\n"), "\(show)")
            #expect(text.contains("outcome   failed, exit 1: 6 succeeded, 1 failed, 1 skipped\n"), "\(show)")
            #expect(text.contains("\n  ✓ build "), "\(show)")
            #expect(text.contains("\n  ✗ test ") && text.contains("failed     ") && text.contains("exit 3"), "\(show)")
            #expect(text.contains("\n  - deploy "), "\(show)")
            #expect(text.contains("\n  fetch  group succeeded: 3/3 members succeeded\n"), "\(show)")
            #expect(text.contains("\n    ✓ fetch[2] "), "\(show)")
            #expect(text.contains("\njoin fetched succeeded: 1/1 succeeded (1 needed)"), "\(show)")
            #expect(text.contains("✓ fetch[1] (y)") && text.contains("stdout: got y"), "the join block, from joins/fetched.json\n\(show)")
            #expect(text.contains("\nfailed: test (exit 3) — \(sandbox.logDirectory)/\(id)/logs/"), "\(show)")
            // The log's last lines, its escape sequence shown escaped, never sent to the terminal.
            #expect(text.contains("\n  | testing\n  | bad \\e[31mred\n"), "\(show)")
            #expect(!text.contains("\u{1B}"), "\(show)")

            let json = try Self.flowrun(["show", "--output", "json"], sandbox)
            let object = try #require(Self.json(json.stdout) as? [String: Any], "\(json)")
            #expect(object["run_id"] as? String == id && object["state"] as? String == "finished" && object["outcome"] as? String == "failed")
            let tasks = object["tasks"] as? [[String: Any]] ?? []
            let statuses = Dictionary(tasks.map { ($0["name"] as? String ?? "", $0["status"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
            #expect(statuses == ["build": "succeeded", "test": "failed", "deploy": "skipped", "m a/b": "succeeded", "m a_b": "succeeded",
                                 "fetch[0]": "succeeded", "fetch[1]": "succeeded", "fetch[2]": "succeeded"], "\(json)")
            let failures = object["failures"] as? [[String: Any]] ?? []
            #expect(failures.map { $0["name"] as? String } == ["test"], "\(json)")
            #expect(failures.first?["log_tail"] as? [String] == ["testing", "bad \u{1B}[31mred"], "JSON keeps the bytes, escaped as JSON\n\(json)")
            let joins = object["joins"] as? [[String: Any]] ?? []
            #expect(joins.first?["report_path"] as? String == "\(sandbox.logDirectory)/\(id)/joins/fetched.json", "\(json)")
        }

        @Test func logsPrintsTheTaskLogTheRecordNames() throws {
            let sandbox = try RunSandbox()
            let id = try Self.record(Self.failing, in: sandbox)
            let test = try Self.flowrun(["logs", "test"], sandbox)
            #expect(test.exitStatus == 0, "\(test)")
            // Into a file: the log's bytes as they are.
            #expect(test.stdout == "testing\nbad \u{1B}[31mred\n", "\(test)")
            let byRun = try Self.flowrun(["logs", id, "build"], sandbox)
            #expect(byRun.exitStatus == 0 && byRun.stdout == "building\n", "\(byRun)")
            // Both logs are named `…-m_a_b.log`: the record, not the name, says which is whose.
            let slash = try Self.flowrun(["logs", "m a/b"], sandbox)
            let underscore = try Self.flowrun(["logs", "m a_b"], sandbox)
            #expect(slash.stdout == "item a/b\n" && underscore.stdout == "item a_b\n", "\(slash)\n\(underscore)")
            let member = try Self.flowrun(["logs", "fetch[1]"], sandbox)
            #expect(member.stdout == "got y\n", "\(member)")

            let skipped = try Self.flowrun(["logs", "deploy"], sandbox)
            #expect(skipped.exitStatus == 0 && skipped.stdout.isEmpty, "\(skipped)")
            #expect(skipped.stderr == "flowrun: 'deploy' did not run (skipped) in run \(id)\n", "\(skipped)")
            let typo = try Self.flowrun(["logs", "tset"], sandbox)
            #expect(typo.exitStatus == 2, "\(typo)")
            #expect(typo.stderr == "flowrun: no task 'tset' in run \(id) (did you mean 'test'?)\n", "\(typo)")
            let unknown = try Self.flowrun(["logs", "\u{1B}]0;x\u{07}"], sandbox)
            #expect(unknown.exitStatus == 2 && unknown.stderr.contains("no task '\\e]0;x\\x07'") && !unknown.stderr.contains("\u{1B}"), "\(unknown)")
        }

        /// The record is read as it is written: relative to a handle, never
        /// through a link. A log replaced by a link to a file of yours is
        /// refused, not printed; a `latest` pointing elsewhere is ignored.
        @Test func recordFilesAreNeverReadThroughALink() throws {
            let sandbox = try RunSandbox()
            let id = try Self.record(Self.failing, in: sandbox)
            let secret = sandbox.file("secret")
            _ = FileManager.default.createFile(atPath: secret, contents: Data("TOP SECRET\n".utf8))
            let logs = "\(sandbox.logDirectory)/\(id)/logs/000"
            // Its own file, or (a small log) its name where a later attempt's file would go.
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(sandbox.logDirectory)/\(id)/summary.json"))) as? [String: Any])
            let testEntry = (summary["tasks"] as? [[String: Any]])?.first { $0["name"] as? String == "test" }
            let testLog = try #require((testEntry?["log"] as? String).map { ($0 as NSString).lastPathComponent })
            try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: logs + "/" + testLog)
            try FileManager.default.createSymbolicLink(atPath: logs + "/" + testLog, withDestinationPath: secret)
            let log = try Self.flowrun(["logs", "test"], sandbox)
            #expect(log.exitStatus == 1, "\(log)")
            #expect(log.stderr == "flowrun: cannot read \(logs)/\(testLog): not a plain file of the record (a link?)\n", "\(log)")
            let show = try Self.flowrun(["show", "--output", "json"], sandbox)
            #expect(show.exitStatus == 0 && !show.stdout.contains("TOP SECRET") && !log.stdout.contains("TOP SECRET"), "\(show)")

            // `latest` → a folder outside named like a run: not followed; the newest run is shown.
            let outside = sandbox.file("elsewhere/20991231-235959-ffffffffffffffff")
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            try FileManager.default.removeItem(atPath: sandbox.logDirectory + "/latest")
            try FileManager.default.createSymbolicLink(atPath: sandbox.logDirectory + "/latest", withDestinationPath: "../elsewhere/20991231-235959-ffffffffffffffff")
            let latest = try Self.flowrun(["show"], sandbox)
            #expect(latest.exitStatus == 0 && latest.stdout.hasPrefix("run       \(id)\n"), "\(latest)")
        }

        // MARK: Which run

        @Test func latestFollowsTheNewestRunAndPrefixesMustBeUnique() throws {
            let sandbox = try RunSandbox()
            var ids: [String] = []
            for _ in 0..<3 {
                ids.append(try Self.record(Self.succeeding, in: sandbox))
                // `latest` is a link beside the runs, to the one just started.
                let latest = try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.logDirectory + "/latest")
                #expect(latest == ids.last, "latest → \(latest), expected \(ids.last ?? "")")
                let show = try Self.flowrun(["show"], sandbox)
                #expect(show.stdout.hasPrefix("run       \(ids.last ?? "")\n"), "\(show)")
            }
            let named = try Self.flowrun(["show", "latest"], sandbox)
            #expect(named.stdout.hasPrefix("run       \(ids[2])\n"), "\(named)")
            let byPrefix = try Self.flowrun(["show", String(ids[0].dropLast(4))], sandbox)
            #expect(byPrefix.exitStatus == 0 && byPrefix.stdout.hasPrefix("run       \(ids[0])\n"), "\(byPrefix)")

            // Every id starts with the date: a prefix of it matches all three.
            let ambiguous = try Self.flowrun(["show", String(ids[0].prefix(4))], sandbox)
            #expect(ambiguous.exitStatus == 2, "\(ambiguous)")
            #expect(ambiguous.stdout.isEmpty, "\(ambiguous)")
            #expect(ambiguous.stderr.hasPrefix("flowrun: '\(ids[0].prefix(4))' matches 3 runs in \(sandbox.logDirectory); give more of the id:\n"), "\(ambiguous)")
            #expect(ambiguous.stderr.hasSuffix(ids.reversed().map { "  " + $0 + "\n" }.joined()), "newest first\n\(ambiguous)")

            let none = try Self.flowrun(["logs", "zzz", "only"], sandbox)
            #expect(none.exitStatus == 2, "\(none)")
            #expect(none.stderr == "flowrun: no run in \(sandbox.logDirectory) starts with 'zzz'; the latest is \(ids[2]) (flowrun runs lists them)\n", "\(none)")

            let empty = try FlowrunBinary.run(["show", "--log-dir", sandbox.file("nothing-here")], in: sandbox.path)
            #expect(empty.exitStatus == 2 && empty.stderr.contains("no runs recorded in \(sandbox.file("nothing-here")) yet"), "\(empty)")
        }

        /// With no `--log-dir`, the records of the workflow the lookup finds:
        /// from a subfolder, the project's `.flowrun/runs`.
        @Test func withoutLogDirTheRecordsAreFoundLikeTheWorkflow() throws {
            let sandbox = try RunSandbox()
            try sandbox.write(workflow: Self.succeeding, to: "flowrun.yaml")
            try FileManager.default.createDirectory(atPath: sandbox.file("src/deep"), withIntermediateDirectories: true)
            let run = try FlowrunBinary.run(["--output", "plain"], in: sandbox.file("src/deep"), environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            let ids = runFolders(in: sandbox.file(".flowrun/runs"))
            try #require(ids.count == 1, "\(ids)")
            let show = try FlowrunBinary.run(["show"], in: sandbox.file("src/deep"))
            #expect(show.exitStatus == 0 && show.stdout.hasPrefix("run       \(ids[0])\n"), "\(show)")
            let logs = try FlowrunBinary.run(["logs", "only"], in: sandbox.file("src"))
            #expect(logs.stdout == "fine\n", "\(logs)")
        }

        // MARK: A live run

        /// `slow` prints, says it is ready, then waits for a file the test
        /// makes: meanwhile `show`, `runs` and `logs` see it running, and
        /// `logs -f` follows it until it ends.
        @Test func aLiveRunIsShownWhileItRunsAndFollowed() throws {
            let sandbox = try RunSandbox()
            let live = try sandbox.start("""
                tasks:
                  first: {run: "echo one"}
                  slow:
                    needs: [first]
                    run: 'echo tick; echo ready > "$SANDBOX/ready"; while [ ! -f "$SANDBOX/go" ]; do sleep 0.05; done; echo bye'
                  after: {needs: [slow], run: "echo after"}
                """)
            #expect(sandbox.waitFor("ready"), "slow never started")
            // Its task_started line: in events.jsonl once it ran a moment (RunRecord+HeldStarts).
            #expect(sandbox.waitForEvent("task_started"), "slow's start was never written")
            let id = try #require(runFolders(in: sandbox.logDirectory).first)

            let show = try Self.flowrun(["show"], sandbox)
            #expect(show.exitStatus == 0, "\(show)")
            #expect(show.stdout.contains("\noutcome   running: 1 running, 1 succeeded, 1 not started yet\n"), "\(show)")
            #expect(show.stdout.contains("\n  ▶ slow   running    for "), "\(show)")
            #expect(show.stdout.contains("\n  ✓ first  succeeded"), "\(show)")
            let json = try #require(Self.json(try Self.flowrun(["show", "--output", "json"], sandbox).stdout) as? [String: Any])
            #expect(json["state"] as? String == "running" && json["outcome"] as? String == "running", "\(json)")
            let runs = try Self.flowrun(["runs"], sandbox)
            #expect(runs.stdout.contains(id) && runs.stdout.contains(" running "), "\(runs)")
            let sofar = try Self.flowrun(["logs", "slow"], sandbox)
            #expect(sofar.exitStatus == 0 && sofar.stdout == "tick\n", "the log so far, found through task_started\n\(sofar)")

            let follower = try LiveFlowrun(["logs", "slow", "-f", "--log-dir", sandbox.logDirectory], environment: [:], directory: sandbox.path, hardTimeout: .seconds(30))
            // Following: it does not end while the task runs.
            #expect(follower.wait(upTo: .milliseconds(700)) == nil, "logs -f ended while the task still ran")
            _ = FileManager.default.createFile(atPath: sandbox.file("go"), contents: nil)
            let followed = follower.finish()
            #expect(followed.exitStatus == 0 && !followed.hung, "\(followed)")
            #expect(followed.stdout == "tick\nbye\n", "\(followed)")
            let ended = live.finish()
            #expect(ended.exitStatus == 0, "\(ended)")

            let after = try Self.flowrun(["show"], sandbox)
            #expect(after.stdout.contains("\noutcome   succeeded, exit 0: 3 succeeded\n"), "\(after)")
            // A finished run: -f prints the log and ends.
            let finished = try Self.flowrun(["logs", "-f", "slow"], sandbox)
            #expect(finished.exitStatus == 0 && finished.stdout == "tick\nbye\n", "\(finished)")
        }

        /// A flowrun killed outright (`kill -9` of its process group) leaves
        /// no summary and no lock: the run did not finish, and what it got
        /// to is read from its events.
        @Test func aRunWhoseFlowrunWasKilledDidNotFinish() throws {
            let sandbox = try RunSandbox()
            let live = try sandbox.start("""
                tasks:
                  done: {run: "echo done"}
                  hold: {needs: [done], run: 'echo ready > "$SANDBOX/ready"; exec sleep 30'}
                """)
            #expect(sandbox.waitFor("ready"), "hold never started")
            // A start is written once the task ran a moment: a SIGKILL sooner leaves none (docs/events-json.md).
            #expect(sandbox.waitForEvent("task_started"), "hold's start was never written")
            let running = try Self.flowrun(["runs"], sandbox)
            #expect(running.stdout.contains(" running "), "\(running)")
            live.signalGroup(SIGKILL)
            _ = live.finish()
            let show = try Self.flowrun(["show"], sandbox)
            #expect(show.exitStatus == 0, "\(show)")
            #expect(show.stdout.contains("\noutcome   did not finish: 1 running, 1 succeeded\n"), "\(show)")
            #expect(show.stdout.contains("no summary.json and no flowrun holds the run"), "\(show)")
            let runs = try Self.flowrun(["runs", "--output", "json"], sandbox)
            let first = (Self.json(runs.stdout) as? [[String: Any]])?.first
            #expect(first?["state"] as? String == "interrupted" && first?["outcome"] as? String == "did not finish", "\(runs)")
        }

        /// `logs -f` of a task that has not started waits for it, and ends
        /// when it does; a run that ends without it ends the wait.
        @Test func followingATaskThatHasNotStartedWaitsForIt() throws {
            let sandbox = try RunSandbox()
            let live = try sandbox.start("""
                tasks:
                  gate: {run: 'echo ready > "$SANDBOX/ready"; while [ ! -f "$SANDBOX/go" ]; do sleep 0.05; done'}
                  later: {needs: [gate], run: "echo later ran"}
                """)
            #expect(sandbox.waitFor("ready"), "gate never started")
            let follower = try LiveFlowrun(["logs", "later", "-f", "--log-dir", sandbox.logDirectory], environment: [:], directory: sandbox.path, hardTimeout: .seconds(30))
            let never = try LiveFlowrun(["logs", "-f", "nowhere", "--log-dir", sandbox.logDirectory], environment: [:], directory: sandbox.path, hardTimeout: .seconds(30))
            #expect(follower.wait(upTo: .milliseconds(500)) == nil, "logs -f gave up on a task that has not started yet")
            _ = FileManager.default.createFile(atPath: sandbox.file("go"), contents: nil)
            let followed = follower.finish()
            #expect(followed.exitStatus == 0 && followed.stdout == "later ran\n", "\(followed)")
            #expect(followed.stderr.contains("'later' has not started yet"), "\(followed)")
            #expect(live.finish().exitStatus == 0)
            // A name no task of the run has: the wait ends with the run.
            let gaveUp = never.finish()
            #expect(gaveUp.exitStatus == 1 && !gaveUp.hung, "\(gaveUp)")
            #expect(gaveUp.stderr.hasSuffix("ended before 'nowhere' started\n"), "\(gaveUp)")
        }

        // MARK: Pruning

        /// `--keep 2`: the two newest records stay (this run's included),
        /// older ones go — but never a run still going, nor anything in the
        /// folder not named like a run, nor what a link in a record points at.
        @Test func pruningKeepsTheNewestAndNeverALiveRun() throws {
            let sandbox = try RunSandbox()
            let old = try Self.record(Self.succeeding, in: sandbox)
            // A link left in the old record's outputs, to a file outside it.
            _ = FileManager.default.createFile(atPath: sandbox.file("precious"), contents: Data("keep me\n".utf8))
            try FileManager.default.createSymbolicLink(atPath: "\(sandbox.logDirectory)/\(old)/outputs/link", withDestinationPath: sandbox.file("precious"))
            try FileManager.default.createDirectory(atPath: sandbox.logDirectory + "/notes", withIntermediateDirectories: false)
            _ = FileManager.default.createFile(atPath: sandbox.logDirectory + "/README", contents: Data("mine\n".utf8))

            let live = try sandbox.start("tasks:\n  hold: {run: 'echo ready > \"$SANDBOX/ready\"; while [ ! -f \"$SANDBOX/go\" ]; do sleep 0.05; done'}\n")
            #expect(sandbox.waitFor("ready"), "the live run never started")
            let liveID = try #require(runFolders(in: sandbox.logDirectory).first { $0 != old })
            // Running for minutes, as far as its folder's time says: only its lock protects it now.
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -600)], ofItemAtPath: "\(sandbox.logDirectory)/\(liveID)")

            var quick: [String] = []
            for _ in 0..<4 { quick.append(try Self.record(Self.succeeding, in: sandbox, extra: ["--keep", "2"])) }
            #expect(Set(runFolders(in: sandbox.logDirectory)) == Set([liveID] + quick.suffix(2)), "kept: \(runFolders(in: sandbox.logDirectory)), live \(liveID), newest \(quick.suffix(2))")
            #expect(sandbox.read("precious") == "keep me\n", "a link in a pruned record was followed")
            #expect(FileManager.default.fileExists(atPath: sandbox.logDirectory + "/notes"))
            #expect(FileManager.default.fileExists(atPath: sandbox.logDirectory + "/README"))

            _ = FileManager.default.createFile(atPath: sandbox.file("go"), contents: nil)
            #expect(live.finish().exitStatus == 0)
            // Over now: the next run prunes it like any other.
            let last = try Self.record(Self.succeeding, in: sandbox, extra: ["--keep", "2"])
            #expect(runFolders(in: sandbox.logDirectory) == [quick[3], last].sorted(), "\(runFolders(in: sandbox.logDirectory))")

            let zero = try FlowrunBinary.run(sandbox.arguments(sandbox.file("workflow.yaml"), ["--keep", "0"]), in: sandbox.path)
            #expect(zero.exitStatus == 2 && zero.stderr.contains("--keep must be at least 1"), "\(zero)")
        }
    }
}
