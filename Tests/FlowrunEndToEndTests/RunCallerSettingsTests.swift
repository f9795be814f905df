import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEnd {
    /// What flowrun's caller set stays set (SPEC §2, issue 16 items 3, 9,
    /// 11): ignored signals (`nohup`), a closed stdout, a low descriptor
    /// limit. The niceness, policy and affinity tests are in
    /// RunTaskEnvironmentTests.
    @Suite struct RunCallerSettingsTests {
        /// SigIgn / SigBlk of /proc/PID/status as a number.
        static func mask(_ line: String?) -> UInt64? {
            guard let line, let tab = line.firstIndex(of: "\t") else { return nil }
            return UInt64(line[line.index(after: tab)...].trimmingCharacters(in: .whitespacesAndNewlines), radix: 16)
        }

        static func bit(_ signal: Int32) -> UInt64 { 1 << UInt64(signal - 1) }

        /// `nohup flowrun …`: a hangup neither stops the run nor reaches the
        /// tasks, which keep SIGHUP ignored; SIGPIPE and SIGXFSZ, which
        /// flowrun ignores for itself, are at their default in the task.
        @Test func underNohupAHangupNeitherStopsTheRunNorTheTasks() throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                tasks:
                  probe:
                    run: |
                      grep SigIgn /proc/self/status > "$SANDBOX/task.sigign"
                      grep SigIgn /proc/$PPID/status > "$SANDBOX/flowrun.sigign"
                      echo ready > "$SANDBOX/probe.ready"
                      while [ ! -e "$SANDBOX/go" ]; do sleep 0.02; done
                      echo done > "$SANDBOX/probe.done"
                """, wrapper: ["/bin/sh", "-c", "trap '' HUP; exec \"$0\" \"$@\""])
            try #require(sandbox.waitFor("probe.ready"), "the task never started\n\(flowrun.wait(upTo: .seconds(1)).map(\.description) ?? "")")
            // What a closing terminal does. A handled SIGHUP runs its handler
            // at once; the task goes on polling for `go` meanwhile.
            flowrun.signalGroup(SIGHUP)
            flowrun.signalGroup(SIGHUP)
            _ = try sandbox.directory.write("go", to: "go")
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 0, "a hangup stopped the run under nohup\n\(ended)")
            #expect(sandbox.read("probe.done") == "done\n", "the task was stopped")
            let task = try #require(Self.mask(sandbox.read("task.sigign")), "no SigIgn from the task")
            #expect(task == Self.bit(SIGHUP), "the task should ignore SIGHUP and nothing else: \(String(task, radix: 16))")
            let own = try #require(Self.mask(sandbox.read("flowrun.sigign")), "no SigIgn of flowrun")
            for signal in [SIGHUP, SIGPIPE, SIGXFSZ] {
                #expect(own & Self.bit(signal) != 0, "flowrun does not ignore signal \(signal): \(String(own, radix: 16))")
            }
            let record = try sandbox.record()
            #expect(record.status("probe") == "succeeded", "\(record.statuses)")
        }

        /// `flowrun wf.yaml >&-`: descriptor 1 is closed when flowrun starts.
        /// The run goes on, and nothing of the console lands in the files
        /// flowrun opens: every line of events.jsonl is a JSON object.
        @Test func aClosedStdoutNeitherStopsTheRunNorReachesTheRecord() throws {
            let sandbox = try RunSandbox()
            let outcome = try sandbox.run(wrapped: ["/bin/sh", "-c", "exec \"$0\" \"$@\" >&-"], """
                tasks:
                  first: {run: echo one}
                  second: {needs: [first], run: echo two}
                """, timeout: .seconds(20))
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")")
            let record = try sandbox.record()
            #expect(record.statuses == ["first": "succeeded", "second": "succeeded"], "\(record.overview)")
            let lines = record.eventLines.filter { !$0.isEmpty }
            #expect(!lines.isEmpty, "no events written")
            for line in lines {
                let parsed = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(parsed != nil, "not a JSON object in events.jsonl (console output?): \(line)")
            }
            #expect(record.events("run_finished").count == 1, "\(record.overview)")
        }

        /// `flowrun wf.yaml | head -1`: the reader leaves while the run goes
        /// on. flowrun ignores SIGPIPE, so its next console write fails
        /// instead of killing it: the run finishes, `finally` runs, the
        /// record is complete. The task ends only once the reader has gone.
        @Test func aReaderThatLeavesDoesNotKillFlowrun() throws {
            let sandbox = try RunSandbox()
            let pipeline = "{ \"$0\" \"$@\"; echo $? > \"$SANDBOX/flowrun.status\"; } | { exec 0<&-; touch \"$SANDBOX/reader.gone\"; }"
            let outcome = try sandbox.run(wrapped: ["/bin/sh", "-c", pipeline], """
                tasks:
                  first:
                    run: while [ ! -e "$SANDBOX/reader.gone" ]; do sleep 0.02; done
                  second: {needs: [first], run: echo two}
                finally:
                  cleanup: {run: echo ran > "$SANDBOX/finally.marker"}
                """, timeout: .seconds(20))
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")")
            let status = sandbox.read("flowrun.status")?.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(status != nil && status != "141", "flowrun ended with \(status ?? "nothing") (141: killed by SIGPIPE)")
            #expect(sandbox.read("finally.marker") == "ran\n", "finally did not run")
            let record = try sandbox.record()
            #expect(record.statuses == ["first": "succeeded", "second": "succeeded", "cleanup": "succeeded"], "\(record.overview)")
        }

        /// A file size limit (`prlimit --fsize`) that a task's log outgrows:
        /// flowrun ignores SIGXFSZ, so the write fails (EFBIG) instead of
        /// killing flowrun with its tasks running; the run ends normally.
        @Test func aFileSizeLimitDoesNotKillFlowrun() throws {
            let sandbox = try RunSandbox()
            let outcome = try sandbox.run(wrapped: [try RunSandbox.tool("prlimit"), "--fsize=100000"], """
                tasks:
                  big: {run: "head -c 300000 /dev/zero | tr '\\\\0' x"}
                finally:
                  cleanup: {run: echo ran > "$SANDBOX/finally.marker"}
                """, timeout: .seconds(20))
            #expect(outcome.signal == nil, "flowrun was killed by signal \(outcome.signal ?? 0) (25: SIGXFSZ)\n\(sandbox.read("stderr") ?? "")")
            #expect(outcome.exitStatus != nil && outcome.exitStatus != 153, "\(sandbox.read("stderr") ?? "")")
            #expect(sandbox.read("finally.marker") == "ran\n", "finally did not run")
        }

        /// 30 tasks at once, each `$FLOWRUN_TASK` writing its `ulimit -n`
        /// and then waiting until all 30 run (a barrier: every task holds its
        /// pipes at the same time).
        static func barrierTasks(_ count: Int) -> String {
            var text = "max_parallel: \(count)\ntasks:\n"
            for number in 1...count {
                text += """
                      t\(number):
                        run: |
                          ulimit -n > "$SANDBOX/limit.$FLOWRUN_TASK"
                          i=0
                          while [ "$(ls "$SANDBOX" | grep -c '^limit\\.')" -lt \(count) ]; do
                            i=$((i + 1)); [ $i -gt 400 ] && exit 3
                            sleep 0.05
                          done

                    """
            }
            return text
        }

        /// `ulimit -n 64` with a higher hard limit: flowrun raises its own
        /// soft limit, so 30 tasks run at once; each task sees the caller's
        /// 64.
        @Test func aLowSoftDescriptorLimitIsRaisedForFlowrunAndKeptForTasks() throws {
            let sandbox = try RunSandbox()
            let outcome = try sandbox.run(
                wrapped: [try RunSandbox.tool("prlimit"), "--nofile=64:4096"], Self.barrierTasks(30), timeout: .seconds(60))
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")\n\(sandbox.read("stdout") ?? "")")
            let limits = (1...30).map { sandbox.read("limit.t\($0)") ?? "missing" }
            #expect(limits == Array(repeating: "64\n", count: 30), "\(limits)")
            let record = try sandbox.record()
            #expect(record.statuses.values.allSatisfy { $0 == "succeeded" }, "\(record.overview)")
        }

        /// A hard limit of 64 too: flowrun cannot raise it, so descriptors
        /// run short for 30 tasks at once (two pipes and a log each). A task
        /// whose descriptors do not fit waits for another to end instead of
        /// failing; each prints, so each log is opened too.
        @Test func whenDescriptorsRunShortTasksWaitInsteadOfFailing() throws {
            let sandbox = try RunSandbox()
            var text = "max_parallel: 30\ntasks:\n"
            for number in 1...30 {
                text += "  t\(number):\n    run: echo hello; ulimit -n > \"$SANDBOX/limit.$FLOWRUN_TASK\"; sleep 0.3; echo bye\n"
            }
            let outcome = try sandbox.run(wrapped: [try RunSandbox.tool("prlimit"), "--nofile=64:64"], text, timeout: .seconds(60))
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")\n\(sandbox.read("stdout") ?? "")")
            let limits = (1...30).map { sandbox.read("limit.t\($0)") ?? "missing" }
            #expect(limits == Array(repeating: "64\n", count: 30), "\(limits)")
            let record = try sandbox.record()
            #expect(record.statuses.count == 30 && record.statuses.values.allSatisfy { $0 == "succeeded" }, "\(record.overview)")
        }
    }
}
