import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEndParallel {
    /// What a task runs in and with (SPEC §2, §7): its environment, stdin,
    /// descriptors, process group and working directory; `sleep` and `http`
    /// actions; and the run record every run leaves. The two that time a
    /// task are `RunEndToEnd.RunTaskTimingTests`.
    @Suite struct RunTaskEnvironmentTests {
        // MARK: the task's environment

        @Test func eachTaskGetsItsEnvironmentStdinAndWorkingDirectory() throws {
            let sandbox = try RunSandbox()
            for folder in ["sub-a", "sub-b"] {
                try FileManager.default.createDirectory(atPath: sandbox.file(folder), withIntermediateDirectories: false)
            }
            // flowrun itself gets a stray descriptor (9), as from a careless parent: tasks must not see it.
            let workflow = try sandbox.write(workflow: """
                env: {GLOBAL: from-top, SHARED: top}
                vars: {v: from-vars, where: sub-b}
                tasks:
                  probe:
                    env: {SHARED: task, LOCAL: "${{ vars.v }}"}
                    run: |
                      ls -l /proc/self/fd/ > "$SANDBOX/probe.fds"
                      readlink /proc/self/fd/0 > "$SANDBOX/probe.stdin"
                      cat > "$SANDBOX/probe.read"
                      {
                        echo "task=$FLOWRUN_TASK"
                        echo "run=$FLOWRUN_RUN_ID"
                        echo "output=$FLOWRUN_OUTPUT"
                        echo "attempt=$FLOWRUN_ATTEMPT"
                        echo "global=$GLOBAL"
                        echo "shared=$SHARED"
                        echo "local=$LOCAL"
                        echo "inherited=$FLOWRUN_E2E_TOKEN"
                        echo "item=${FLOWRUN_ITEM-unset}"
                        echo "index=${FLOWRUN_INDEX-unset}"
                        echo "pgid=$(cut -d' ' -f5 /proc/$$/stat)"
                        echo "sid=$(cut -d' ' -f6 /proc/$$/stat)"
                        echo "pid=$$"
                        echo "autogroup=$(cut -d' ' -f1 /proc/self/autogroup)"
                        echo "tty=$(cat /dev/tty < /dev/null > /dev/null 2>&1; echo $?)"
                      } > "$SANDBOX/probe.env"
                  default-cwd: {run: pwd -P > "$SANDBOX/cwd-default"}
                  relative-cwd: {cwd: sub-a, run: pwd -P > "$SANDBOX/cwd-relative"}
                  templated-cwd: {cwd: "${{ env.SANDBOX }}/${{ vars.where }}", run: pwd -P > "$SANDBOX/cwd-templated"}
                groups:
                  fan:
                    foreach: [red, green, blue]
                    task:
                      run: echo "$FLOWRUN_TASK $FLOWRUN_ITEM $FLOWRUN_INDEX" ${{ item }} ${{ index }} >> "$SANDBOX/fan"
                  named:
                    foreach: [x, y]
                    task:
                      name: paint-${{ item }}
                      run: echo "$FLOWRUN_TASK $FLOWRUN_ITEM $FLOWRUN_INDEX" >> "$SANDBOX/named"
                """)
            let flowrun = try LiveFlowrun(
                sandbox.arguments(workflow, []), environment: sandbox.environment, directory: sandbox.path,
                hardTimeout: .seconds(30), inheritedDescriptor: 9)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 0, "\(ended)")
            let record = try sandbox.record()

            let values = Dictionary(sandbox.lines("probe.env").compactMap { line -> (String, String)? in
                guard let equals = line.firstIndex(of: "=") else { return nil }
                return (String(line[..<equals]), String(line[line.index(after: equals)...]))
            }, uniquingKeysWith: { first, _ in first })
            #expect(values["task"] == "probe")
            #expect(values["run"] == record.runID)
            #expect(record.summary["run_id"] as? String == record.runID)
            // Through flowrun's handle on the run folder, so a swapped path cannot redirect it.
            let output = values["output"] ?? ""
            #expect(output.wholeMatch(of: #/\/proc\/\d+\/fd\/\d+\/outputs\/\d{6}-probe\.1/#) != nil, "\(output)")
            #expect(values["attempt"] == "1")
            #expect(values["global"] == "from-top")
            #expect(values["shared"] == "task", "the task's env wins over the top level's")
            #expect(values["local"] == "from-vars")
            #expect(values["inherited"] == sandbox.token, "flowrun's own environment is inherited")
            #expect(values["item"] == "unset" && values["index"] == "unset", "FLOWRUN_ITEM/INDEX outside a fan-out")
            #expect(values["pgid"] != nil && values["pgid"] == values["pid"], "the shell leads its own process group: \(values)")
            #expect(values["pgid"] != String(flowrun.pid))
            // Without a terminal (as here, unless a person runs the tests in
            // one), the shell stays in flowrun's session, so in the caller's
            // scheduler autogroup, where the caller's nice value counts; with
            // one, it leads a session of its own (`RunJobControlTests`).
            // flowrun's own rule: only ENXIO from /dev/tty means "no terminal".
            let ownTerminal = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC)
            let hasTerminal = ownTerminal >= 0 || errno != ENXIO
            if ownTerminal >= 0 { close(ownTerminal) }
            if hasTerminal {
                #expect(values["sid"] == values["pid"], "flowrun has a terminal: the shell leads a session of its own: \(values)")
            } else {
                // In a PID namespace whose session began outside it (a CI
                // sandbox) both ids read 0; the shell still must not lead one.
                #expect(values["sid"] == String(getsid(0)), "no terminal: the shell stays in the caller's session: \(values)")
                #expect(values["sid"] != values["pid"], "no terminal: the shell must not lead a session: \(values)")
                // A kernel without autogroups (or a sandbox hiding them) shows
                // an empty file to both; then the session check above carries it.
                let autogroup = ProcessProbe.text("/proc/self/autogroup") ?? ""
                #expect(values["autogroup"] == String(autogroup.split(separator: " ").first ?? ""),
                        "the task left the caller's autogroup (\(autogroup)): \(values)")
            }
            #expect(values["tty"] != "0", "the task could read a terminal: \(values)")

            #expect(sandbox.read("probe.stdin") == "/dev/null\n")
            #expect(sandbox.read("probe.read") == "", "stdin gave bytes")
            let leaked = Self.strayDescriptors(sandbox.read("probe.fds") ?? "")
            #expect(leaked.isEmpty, "the task inherited descriptors beyond 0-2: \(leaked)\n\(sandbox.read("probe.fds") ?? "")")

            let real = try #require(realpath(sandbox.path, nil).map { pointer in defer { free(pointer) }; return String(cString: pointer) })
            #expect(sandbox.read("cwd-default") == real + "\n", "the default cwd is flowrun's")
            #expect(sandbox.read("cwd-relative") == real + "/sub-a\n")
            #expect(sandbox.read("cwd-templated") == real + "/sub-b\n")

            #expect(sandbox.lines("fan").sorted() == ["fan[0] red 0 red 0", "fan[1] green 1 green 1", "fan[2] blue 2 blue 2"],
                    "\(sandbox.lines("fan"))")
            #expect(sandbox.lines("named").sorted() == ["paint-x x 0", "paint-y y 1"], "\(sandbox.lines("named"))")
            #expect(record.status("fan[1]") == "succeeded" && record.status("paint-y") == "succeeded", "\(record.statuses)")
        }

        /// `ls -l /proc/self/fd/` lines for descriptors other than 0–2 and
        /// ls's own directory handle.
        static func strayDescriptors(_ listing: String) -> [String] {
            listing.split(separator: "\n").compactMap { line -> String? in
                guard let arrow = line.range(of: " -> ") else { return nil }
                let number = line[..<arrow.lowerBound].split(separator: " ").last.map(String.init) ?? ""
                let target = String(line[arrow.upperBound...])
                if ["0", "1", "2"].contains(number) { return nil }
                if target.hasPrefix("/proc/") && target.hasSuffix("/fd") { return nil }
                return "\(number) -> \(target)"
            }
        }

        /// What a task's shell ignores: exactly what flowrun's caller
        /// ignored (`nohup`, a shell's background job, a CI runner), never
        /// what flowrun itself ignores (SIGPIPE, SIGXFSZ) or handles (SIGINT,
        /// SIGTERM, SIGHUP, SIGTSTP, SIGCHLD); and nothing blocked.
        struct IgnoredByCaller: CustomTestStringConvertible, Sendable {
            var traps: String
            var signals: [Int32]
            var testDescription: String { traps.isEmpty ? "nothing ignored" : "ignored: \(traps)" }
            /// SigIgn in /proc/PID/status: bit N-1 for signal N, 16 hex digits.
            var mask: String {
                String(signals.reduce(UInt64(0)) { $0 | 1 << UInt64($1 - 1) }, radix: 16).leftPadded(to: 16)
            }
        }

        @Test(arguments: [
            IgnoredByCaller(traps: "", signals: []),
            IgnoredByCaller(
                traps: "HUP INT QUIT PIPE USR1 USR2 TERM ALRM XFSZ TSTP",
                signals: [SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGTERM, SIGALRM, SIGXFSZ, SIGTSTP]),
        ])
        func aTaskIgnoresExactlyWhatFlowrunsCallerIgnoredAndBlocksNothing(_ caller: IgnoredByCaller) throws {
            let sandbox = try RunSandbox()
            // The shell ignores these, then becomes flowrun (exec keeps SIG_IGN).
            let outcome = try sandbox.run(wrapped: ["/bin/sh", "-c", "trap '' \(caller.traps); exec \"$0\" \"$@\""], """
                tasks:
                  probe:
                    run: |
                      while IFS= read -r line; do
                        case $line in SigBlk:*|SigIgn:*) echo "$line" >> "$SANDBOX/signals";; esac
                      done < /proc/self/status
                """, timeout: .seconds(20))
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")")
            #expect(sandbox.lines("signals") == ["SigBlk:\t0000000000000000", "SigIgn:\t\(caller.mask)"])
        }

        /// Tasks run at the niceness flowrun was started with (`nice -n 13
        /// flowrun`), all of them: those started by the engine's Dispatch
        /// threads (libdispatch gives its workers a nice value of their own)
        /// and those started by the output thread as a task ends, with more
        /// tasks allowed at once than there are cores. Field 19 of
        /// /proc/PID/stat is the nice value.
        @Test func underNiceEveryTaskRunsAtTheCallersNiceValue() throws {
            let sandbox = try RunSandbox()
            let cores = ProcessInfo.processInfo.activeProcessorCount
            let outcome = try sandbox.run(
                wrapped: [try RunSandbox.tool("nice"), "-n", "13"],
                Self.probes(roots: 6, maxParallel: 2 * cores + 2, probe: "awk '{print $19}' /proc/self/stat", into: "nice"))
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")")
            let expected = min(19, getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) + 13)
            #expect(sandbox.lines("nice") == Array(repeating: "\(expected)", count: 12))
        }

        /// A flowrun started under SCHED_BATCH (`chrt --batch`) keeps that
        /// policy for every task, with more of them allowed than cores.
        /// Field 41 of /proc/PID/stat is the policy (3: SCHED_BATCH).
        @Test func aFlowrunStartedUnderSCHED_BATCHKeepsItForItsTasks() throws {
            let sandbox = try RunSandbox()
            let outcome = try sandbox.run(
                wrapped: [try RunSandbox.tool("chrt"), "--batch", "0"],
                Self.probes(roots: 6, maxParallel: 64, probe: "awk '{print $41}' /proc/self/stat", into: "policies"))
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")")
            #expect(sandbox.lines("policies") == Array(repeating: "3", count: 12))
        }

        /// A flowrun started on one CPU (`taskset -c 0`) keeps its tasks
        /// there. (On a one-CPU machine this cannot tell anything apart.)
        @Test func aFlowrunPinnedToOneCPUKeepsItsTasksThere() throws {
            let sandbox = try RunSandbox()
            let outcome = try sandbox.run(
                wrapped: [try RunSandbox.tool("taskset"), "-c", "0"],
                Self.probes(roots: 6, maxParallel: 64, probe: "grep Cpus_allowed_list /proc/self/status", into: "cpus"))
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")")
            #expect(sandbox.lines("cpus") == Array(repeating: "Cpus_allowed_list:\t0", count: 12))
        }

        /// `roots` tasks that need nothing (started from the engine's
        /// queue) and as many that each need one of them (started by the
        /// output thread as that one ends), each appending the line `probe`
        /// prints about itself to `$SANDBOX/FILE`.
        static func probes(roots: Int, maxParallel: Int, probe: String, into file: String) -> String {
            var text = "max_parallel: \(maxParallel)\ntasks:\n"
            for number in 1...roots {
                text += "  root\(number):\n    run: \(probe) >> \"$SANDBOX/\(file)\"\n"
                text += "  next\(number):\n    needs: [root\(number)]\n    run: \(probe) >> \"$SANDBOX/\(file)\"\n"
            }
            return text
        }

        @Test func aMissingWorkingDirectoryFailsTheTask() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  lost: {cwd: does-not-exist, run: "touch $SANDBOX/lost.ran"}
                  fine: {run: "true"}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            #expect(!sandbox.exists("lost.ran"))
            let record = try sandbox.record()
            #expect(record.statuses == ["lost": "failed", "fine": "succeeded"], "\(record.overview)")
        }

        // MARK: sleep and http

        struct HTTPCase: CustomTestStringConvertible, Sendable {
            var serverStatus: Int
            var expect: Int?
            var outcome: String
            var testDescription: String { "server \(serverStatus), expect \(expect.map(String.init) ?? "default") → \(outcome)" }
        }

        @Test(arguments: [
            HTTPCase(serverStatus: 200, expect: nil, outcome: "succeeded"),
            HTTPCase(serverStatus: 500, expect: nil, outcome: "failed"),
            HTTPCase(serverStatus: 404, expect: 200, outcome: "failed"),
            HTTPCase(serverStatus: 500, expect: 500, outcome: "succeeded"),
            HTTPCase(serverStatus: 204, expect: 204, outcome: "succeeded"),
        ])
        func anHTTPTaskSucceedsOnlyOnTheExpectedStatus(_ example: HTTPCase) throws {
            let sandbox = try RunSandbox()
            let server = try OneRequestHTTPServer(status: example.serverStatus)
            let run = try sandbox.run("""
                vars: {base: "\(server.url)"}
                tasks:
                  ping:
                    http:
                      url: "${{ vars.base }}/health?check=1"
                      \(example.expect.map { "expect: \($0)" } ?? "")
                  after: {needs: ping, run: "touch $SANDBOX/after.ran"}
                """)
            run.expectNoCrash()
            let request = try #require(server.request(), "the server got no request\n\(run)")
            #expect(request.hasPrefix("GET /health?check=1 HTTP/1."), "\(request)")
            let record = try sandbox.record()
            #expect(record.status("ping") == example.outcome, "\(record.overview)")
            #expect(run.exitStatus == (example.outcome == "succeeded" ? 0 : 1), "\(run)")
            #expect(sandbox.exists("after.ran") == (example.outcome == "succeeded"))
        }

        /// The response body is the stash's stdout and the status its exit code.
        @Test func anHTTPTaskStashesTheResponse() throws {
            let sandbox = try RunSandbox()
            let server = try OneRequestHTTPServer(status: 200, body: "{\"ok\": true}\n")
            let run = try sandbox.run("""
                tasks:
                  fetch: {http: {url: "\(server.url)/data"}}
                  use:
                    needs: fetch
                    run: printf '%s %s' ${{ tasks.fetch.stdout }} ${{ tasks.fetch.exit_code }} > "$SANDBOX/used"
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.read("used") == "{\"ok\": true} 200")
        }

        /// A 64 MB response body streams to the log as it arrives: flowrun's
        /// peak RSS stays under 50 MB, the log holds the request line, the
        /// status and every byte, the stash is the body's last 1 MiB.
        @Test func anHTTPTasksLargeBodyStreamsToTheLogWithFlatMemory() throws {
            let size = 64 << 20
            let sandbox = try RunSandbox()
            let server = try OneRequestHTTPServer(status: 200, body: String(repeating: "y", count: size - 1) + "z")
            let run = try sandbox.run("""
                tasks:
                  download: {http: {url: "\(server.url)/big"}}
                """, timeout: .seconds(60))
            print(String(format: "http 64MB: %.2f s wall, %.1f MB peak RSS", run.wallSeconds, run.peakRSSMegabytes))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.peakRSSMegabytes < 50, "flowrun's peak RSS was \(run.peakRSSMegabytes) MB\n\(run)")
            let record = try sandbox.record()
            let head = "GET \(server.url)/big\nHTTP 200\n"
            let log = try #require(record.logText("download").map { Data($0.utf8) })
            #expect(log.count == head.utf8.count + size, "the log holds \(log.count) bytes")
            #expect(String(decoding: log.prefix(head.utf8.count), as: UTF8.self) == head)
            #expect(log.last == UInt8(ascii: "z"))
            let stash = try #require(record.stdout("download"))
            #expect(stash.utf8.count == 1 << 20 && stash.hasSuffix("yz"), "the stash holds \(stash.utf8.count) bytes")
        }

        /// A header value from an upstream output that holds a line break
        /// would inject a header of its own: the task fails, nothing is sent.
        @Test func anHTTPHeaderWithALineBreakIsRefusedNotSent() throws {
            let sandbox = try RunSandbox()
            let server = try OneRequestHTTPServer(status: 200, timeout: .seconds(3))
            let run = try sandbox.run("""
                tasks:
                  token:
                    run: |
                      {
                        echo 'value<<EOF'
                        printf 'abc\\r\\nX-Injected: yes\\n'
                        echo 'EOF'
                      } >> "$FLOWRUN_OUTPUT"
                  call:
                    needs: token
                    http: {url: "\(server.url)/api", headers: {Authorization: "${{ tasks.token.outputs.value }}"}}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("call") == "failed", "\(record.overview)")
            let log = try #require(record.logText("call").map { Data($0.utf8) })
            #expect(String(decoding: log, as: UTF8.self).contains("header 'Authorization' contains a line break"), "\(String(decoding: log, as: UTF8.self))")
            #expect(server.request(waiting: .seconds(3)) == nil, "the request was sent")
        }

        @Test func anHTTPTaskSendsItsMethodHeadersAndBody() throws {
            let sandbox = try RunSandbox()
            let server = try OneRequestHTTPServer(status: 201)
            let run = try sandbox.run("""
                vars: {tag: v1.2}
                tasks:
                  post:
                    http:
                      url: "\(server.url)/submit/${{ vars.tag }}"
                      method: POST
                      headers: {X-Flowrun-Tag: "${{ vars.tag }}"}
                      body: "payload ${{ vars.tag }}"
                      expect: 201
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let request = try #require(server.request(), "the server got no request")
            #expect(request.hasPrefix("POST /submit/v1.2 HTTP/1."), "\(request)")
            #expect(request.lowercased().contains("\r\nx-flowrun-tag: v1.2\r\n"), "\(request)")
            #expect(request.hasSuffix("\r\n\r\npayload v1.2"), "\(request)")
        }

        // MARK: the run record

        @Test func theRunRecordHoldsEventsLogsOutputsAndTheSummary() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                name: record-check
                tasks:
                  speak: {run: "echo hello; echo key=value >> $FLOWRUN_OUTPUT"}
                  fail: {run: "echo oops >&2; exit 2", needs: speak}
                  skipped: {run: "true", needs: fail}
                  nap: {sleep: 50ms}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.eventLines.last == "", "events.jsonl should end with a newline")
            for (number, line) in record.eventLines.dropLast().enumerated() {
                let parsed = record.events[number]
                #expect(parsed != nil, "line \(number + 1) of events.jsonl is not a JSON object: \(line)")
                #expect(parsed?["event"] is String, "line \(number + 1) has no event: \(line)")
                let time = parsed?["time"] as? String ?? ""
                #expect(RunEndToEnd.RunProcessTreeTests.epochSeconds(iso8601: time) != nil, "line \(number + 1) has no ISO 8601 time: \(line)")
            }
            let kinds = record.events.map { $0?["event"] as? String ?? "?" }
            #expect(kinds.first == "run_started" && kinds.last == "run_finished", "\(kinds)")
            #expect(kinds.filter { $0 == "run_started" }.count == 1 && kinds.filter { $0 == "run_finished" }.count == 1)
            // In time order, each task's own; a start held back a moment may follow others' later lines.
            let bySubject = Dictionary(grouping: record.events.compactMap { $0 }, by: { ($0["task"] ?? $0["group"] ?? $0["join"]) as? String ?? "" })
            for (subject, events) in bySubject {
                let elapsed = events.compactMap { double($0["elapsed"]) }
                #expect(elapsed == elapsed.sorted(), "the events of '\(subject)' are not in time order")
            }
            #expect(record.events.first??["run_id"] as? String == record.runID)

            #expect(record.summary["run_id"] as? String == record.runID)
            #expect(record.summary["workflow"] as? String == "record-check")
            #expect(record.exitCode == 1)
            #expect(record.statuses == ["speak": "succeeded", "fail": "failed", "skipped": "skipped", "nap": "succeeded"])
            #expect(record.outputs("speak") == ["key": "value"])
            #expect(record.logText("speak") == "hello\n")
            #expect(record.logText("fail") == "oops\n")
            #expect(ProcessProbe.text(record.outputsPath("speak", attempt: 1)) == "key=value\n")
            #expect(run.stdout.contains("record \(record.directory)") || run.stdout.contains("record: \(record.directory)"), "\(run)")
        }

        /// Without --log-dir the record goes to .flowrun/runs/RUN_ID under
        /// the current directory.
        @Test func theDefaultRecordIsUnderDotFlowrun() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: "tasks:\n  a: {run: echo hi}\n")
            let run = try FlowrunBinary.run([workflow, "--output", "plain"], in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            let runs = runFolders(in: sandbox.file(".flowrun/runs"))
            try #require(runs.count == 1, "\(runs)")
            let record = try RunRecordFiles(directory: sandbox.file(".flowrun/runs/" + runs[0]))
            #expect(record.status("a") == "succeeded")
        }
    }
}

private extension String {
    /// The text with zeros in front, `width` characters at least.
    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
