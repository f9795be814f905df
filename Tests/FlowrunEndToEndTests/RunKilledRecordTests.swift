import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// Issue 31.2: a run whose flowrun was killed says so in its record —
    /// outcome `killed`, exit 128+N as the shell saw it (137 for SIGKILL) —
    /// and `flowrun resume` takes it as interrupted: it runs what did not
    /// succeed. For both of flowrun's processes: the pid the shell knows
    /// (the supervisor; the engine writes its record) and the engine (the
    /// supervisor appends `run_killed` to events.jsonl).
    @Suite struct RunKilledRecordTests {
        /// `first` succeeds and prints; `lone` succeeds and nothing needs it;
        /// `slow` holds the run until it is killed (the first time only);
        /// `after` reads `first`'s stdout. Each task counts its runs.
        static let workflow = """
            tasks:
              first:
                run: |
                  echo ran >> "$SANDBOX/first.count"
                  echo first-out
              lone:
                run: |
                  echo ran >> "$SANDBOX/lone.count"
                  echo lone-out
              slow:
                needs: [first]
                run: |
                  echo ran >> "$SANDBOX/slow.count"
                  if [ ! -e "$SANDBOX/release" ]; then
                    echo ready > "$SANDBOX/slow.ready"
                    while :; do sleep 0.05; done
                  fi
              after:
                needs: [slow]
                run: |
                  echo ran >> "$SANDBOX/after.count"
                  echo saw ${{ tasks.first.stdout }}

            """

        /// Starts the run and waits until `slow` runs (`first` and `lone` have succeeded).
        static func startAndWaitForSlow(_ sandbox: RunSandbox) throws -> LiveFlowrun {
            let flowrun = try sandbox.start(workflow)
            guard sandbox.waitFor("slow.ready") else {
                flowrun.signalGroup(SIGKILL)
                Issue.record("slow never started: \(flowrun.finish())")
                throw CancellationError()
            }
            try #require(sandbox.waitFor("lone.count"), "lone never ran")
            // `lone`'s end is in the record before the kill (a short attempt's line waits 0.1 s at most).
            try #require(poll(until: .seconds(10)) {
                (ProcessProbe.text(Self.eventsPath(sandbox)) ?? "").contains("\"task\":\"lone\"")
            }, "lone's end never reached events.jsonl")
            return flowrun
        }

        static func eventsPath(_ sandbox: RunSandbox) -> String {
            sandbox.logDirectory + "/" + (runFolders(in: sandbox.logDirectory).first ?? "none") + "/events.jsonl"
        }

        /// `flowrun runs --output json`'s first (newest) run.
        static func listedRun(_ sandbox: RunSandbox) throws -> [String: Any] {
            let runs = try FlowrunBinary.run(["runs", "--output", "json", "--log-dir", sandbox.logDirectory], in: sandbox.path)
            #expect(runs.exitStatus == 0, "\(runs)")
            let list = try #require(try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]], "\(runs)")
            return try #require(list.first, "no run listed")
        }

        static func resume(_ sandbox: RunSandbox) throws -> FlowrunRun {
            #expect(FileManager.default.createFile(atPath: sandbox.file("release"), contents: nil))
            return try FlowrunBinary.run(
                ["resume", "--log-dir", sandbox.logDirectory, "--output", "plain"], in: sandbox.path, environment: sandbox.environment)
        }

        /// The newest record (the resume's), read whole.
        static func newestRecord(_ sandbox: RunSandbox) throws -> RunRecordFiles {
            let folders = runFolders(in: sandbox.logDirectory)
            // The killed engine's record has no summary.json: not among them.
            let records = try folders.filter { FileManager.default.fileExists(atPath: sandbox.logDirectory + "/" + $0 + "/summary.json") }
                .map { try RunRecordFiles(directory: sandbox.logDirectory + "/" + $0) }
            return try #require(records.first { $0.summary["resumed_from"] != nil }, "no resumed run among \(folders)")
        }

        /// `kill -9` (and a catchable SIGUSR1) of the pid the shell knows: the
        /// engine records exit 128+N and outcome `killed`; `resume` restores
        /// `first` and `lone` and runs `slow` and `after`, which sees `first`'s stdout.
        @Test(arguments: [SIGKILL, SIGUSR1])
        func killingTheSupervisorRecordsKilledAndResumeRunsWhatDidNotSucceed(_ signal: Int32) throws {
            let sandbox = try RunSandbox()
            let flowrun = try Self.startAndWaitForSlow(sandbox)
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            kill(flowrun.pid, signal)
            let ended = flowrun.finish()
            #expect(ended.signal == signal, "\(ended)")
            #expect(poll(until: .seconds(10)) { !ProcessProbe.isAlive(engine) }, "the engine \(engine) kept running without its supervisor")

            let record = try sandbox.record()
            #expect(record.exitCode == 128 + Int(signal), "summary.json: \(record.summary)")
            #expect(record.summary["stopped_by"] as? String == "killed", "\(record.summary)")
            #expect(record.events("run_finished").first?["exit_code"] as? Int == 128 + Int(signal))
            #expect(record.status("first") == "succeeded" && record.status("slow") == "cancelled", "\(record.overview)")
            let listed = try Self.listedRun(sandbox)
            #expect(listed["outcome"] as? String == "killed", "\(listed)")
            #expect(listed["exit_code"] as? Int == 128 + Int(signal), "\(listed)")

            let resumed = try Self.resume(sandbox)
            #expect(resumed.exitStatus == 0, "\(resumed)")
            #expect(!resumed.stdout.contains("nothing to resume"), "\(resumed)")
            #expect(sandbox.lines("first.count").count == 1, "first ran again")
            #expect(sandbox.lines("lone.count").count == 1, "lone ran again")
            #expect(sandbox.lines("slow.count").count == 2, "slow did not run again")
            #expect(sandbox.lines("after.count").count == 1, "after never ran")
            let new = try Self.newestRecord(sandbox)
            #expect(new.stdout("after") == "saw first-out", "\(new.overview)")
        }

        /// `kill -9` of the engine: the supervisor exits 137 and ends
        /// events.jsonl with `run_killed` (signal 9, exit 137, what resume
        /// needs); `runs` says `killed`, 137; `resume` runs what did not
        /// succeed. Without the killed run's stashes it restores only what
        /// nothing that runs again reads: `lone`, not `first` (`after` reads it).
        @Test func killingTheEngineRecordsKilledAndResumeRunsWhatDidNotSucceed() throws {
            let sandbox = try RunSandbox()
            let flowrun = try Self.startAndWaitForSlow(sandbox)
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            kill(engine, SIGKILL)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 137, "\(ended)")

            let folder = try #require(runFolders(in: sandbox.logDirectory).first)
            #expect(!FileManager.default.fileExists(atPath: sandbox.logDirectory + "/" + folder + "/summary.json"))
            let lines = (ProcessProbe.text(Self.eventsPath(sandbox)) ?? "").split(separator: "\n")
            let last = try #require(lines.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] },
                                    "the last line of events.jsonl is not JSON: \(lines.suffix(2))")
            #expect(last["event"] as? String == "run_killed", "\(last)")
            #expect(last["signal"] as? Int == 9 && last["exit_code"] as? Int == 137, "\(last)")
            #expect((last["file"] as? String)?.hasSuffix("workflow.yaml") == true, "\(last)")
            #expect((last["plan_identity"] as? String)?.count == 32, "\(last)")
            let problems = try RunEndToEndParallel.EventsSchemaTests.validate([String(lines.last!)])
            #expect(problems.isEmpty, "run_killed does not match docs/events-schema.json: \(problems)")

            let listed = try Self.listedRun(sandbox)
            #expect(listed["outcome"] as? String == "killed", "\(listed)")
            #expect(listed["exit_code"] as? Int == 137, "\(listed)")
            let shown = try FlowrunBinary.run(["show", "--log-dir", sandbox.logDirectory], in: sandbox.path)
            #expect(shown.stdout.contains("outcome   killed, exit 137"), "\(shown)")

            let resumed = try Self.resume(sandbox)
            #expect(resumed.exitStatus == 0, "\(resumed)")
            #expect(sandbox.lines("lone.count").count == 1, "lone ran again")
            #expect(sandbox.lines("first.count").count == 2, "first was restored without its stdout, which after reads")
            #expect(sandbox.lines("slow.count").count == 2, "slow did not run again")
            #expect(sandbox.lines("after.count").count == 1, "after never ran")
            let new = try Self.newestRecord(sandbox)
            #expect(new.stdout("after") == "saw first-out", "\(new.overview)")
            #expect(new.finished("lone")?["reused"] as? String == "restored", "\(new.overview)")
        }

        /// The engine stopped (SIGSTOP: it cannot act), then the pid the
        /// shell knows killed: the kernel continues the engine (its parent-
        /// death signal is SIGCONT), which kills every task process of the
        /// 50-task run — nobody sends it SIGCONT — and records the run killed.
        @Test func killingTheSupervisorWhileTheEngineIsStoppedLeavesNoTaskProcess() throws {
            let sandbox = try RunSandbox()
            let flowrun = try RunSupervisorTests.startFifty(sandbox)
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            kill(engine, SIGSTOP)
            try #require(poll(until: .seconds(5)) { Self.state(of: engine) == "T" }, "the engine never stopped")
            kill(flowrun.pid, SIGKILL)
            RunSupervisorTests.expectNoTaskLeft(sandbox, engine: engine)
            #expect(flowrun.finish().signal == SIGKILL)
            #expect(poll(until: .seconds(10)) { !ProcessProbe.isAlive(engine) }, "the engine \(engine) stayed stopped")
            let record = try sandbox.record()
            #expect(record.exitCode == 137 && record.summary["stopped_by"] as? String == "killed", "\(record.summary)")
        }

        /// The pid the shell knows stopped (SIGSTOP), then the engine
        /// killed: the engine's sentinel (a child whose parent-death signal
        /// tells it) continues the supervisor, which kills every task process
        /// — nobody sends it SIGCONT — and exits 137.
        @Test func killingTheEngineWhileTheSupervisorIsStoppedLeavesNoTaskProcess() throws {
            let sandbox = try RunSandbox()
            let flowrun = try RunSupervisorTests.startFifty(sandbox)
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            kill(flowrun.pid, SIGSTOP)
            try #require(poll(until: .seconds(5)) { Self.state(of: flowrun.pid) == "T" }, "the supervisor never stopped")
            kill(engine, SIGKILL)
            RunSupervisorTests.expectNoTaskLeft(sandbox, engine: engine)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 137, "\(ended)")
        }

        /// The state letter of /proc/PID/stat (`T`: stopped).
        static func state(of pid: pid_t) -> String? {
            guard let stat = ProcessProbe.text("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
            return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
        }

        /// A killed engine's record keeps one hash of every identity: a
        /// workflow changed since is refused (exit 2, nothing run).
        @Test func resumingAKilledEnginesRunAfterTheWorkflowChangedIsRefused() throws {
            let sandbox = try RunSandbox()
            let flowrun = try Self.startAndWaitForSlow(sandbox)
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            kill(engine, SIGKILL)
            #expect(flowrun.finish().exitStatus == 137)
            try sandbox.write(workflow: Self.workflow.replacingOccurrences(of: "echo lone-out", with: "echo lone-changed"))
            let refused = try Self.resume(sandbox)
            #expect(refused.exitStatus == 2, "\(refused)")
            #expect(refused.stderr.contains("the workflow changed since that run"), "\(refused)")
            #expect(sandbox.lines("lone.count").count == 1 && sandbox.lines("slow.count").count == 1, "a refused resume ran something")
            #expect(runFolders(in: sandbox.logDirectory).count == 1, "a refused resume made a record")
        }
    }
}
