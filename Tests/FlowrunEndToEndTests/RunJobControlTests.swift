import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEnd {
    /// A terminal's job control (SPEC §7, issue 16 item 11): Ctrl-Z stops
    /// flowrun with its tasks and `fg` resumes them; tasks have no
    /// controlling terminal, so one that reads /dev/tty fails at once.
    @Suite struct RunJobControlTests {
        /// The state letter of /proc/PID/stat (R, S, T, Z, …), nil once gone.
        static func state(of pid: Int32) -> Character? {
            guard let stat = ProcessProbe.text("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
            return stat[close...].dropFirst(2).first
        }

        /// SIGTSTP to flowrun's process group (what Ctrl-Z does): the task,
        /// which appends a line every 50 ms, stops growing while flowrun is
        /// stopped; SIGCONT (`fg`) resumes it and the run finishes. The
        /// task's 4 s timeout counts only the time the run was not stopped:
        /// it is stopped for 3 s of a task that runs about 1.5 s.
        @Test func ctrlZStopsTheTasksWithFlowrunAndFgResumesThem() throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                tasks:
                  count:
                    timeout: 4s
                    run: |
                      echo $$ > "$SANDBOX/count.pid"
                      for i in $(seq 30); do echo $i >> "$SANDBOX/count"; sleep 0.05; done
                """)
            try #require(sandbox.waitFor("count", lines: 3), "the task never counted\n\(flowrun.wait(upTo: .seconds(1)).map(\.description) ?? "")")
            let shell = try #require(sandbox.pid(in: "count.pid"))
            flowrun.signalGroup(SIGTSTP)
            let stopped = poll(until: .seconds(5)) { Self.state(of: shell) == "T" && Self.state(of: flowrun.pid) == "T" }
            #expect(stopped, "after SIGTSTP: task \(Self.state(of: shell).map(String.init) ?? "gone"), flowrun \(Self.state(of: flowrun.pid).map(String.init) ?? "gone")")
            let atStop = sandbox.lines("count").count
            // The time stopped: long enough for 60 lines if the task ran on.
            usleep(3_000_000)
            let afterPause = sandbox.lines("count").count
            #expect(afterPause <= atStop + 1, "the task went on counting while flowrun was stopped: \(atStop) → \(afterPause)")
            flowrun.signalGroup(SIGCONT)
            #expect(sandbox.waitFor("count", lines: afterPause + 3, timeout: .seconds(10)), "the task did not resume after SIGCONT")
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 0, "\(ended)")
            #expect(sandbox.lines("count").count == 30)
            let record = try sandbox.record()
            #expect(record.status("count") == "succeeded", "the timeout counted the time stopped? \(record.overview)")
        }

        /// In a terminal (a tmux pane), a task leads a session of its own
        /// and has no controlling terminal: one that reads /dev/tty fails at
        /// once instead of hanging stopped in the background, and the run ends.
        @Test func aTaskThatReadsTheTerminalFailsAtOnceInsteadOfHanging() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  reader:
                    run: |
                      echo "$(cut -d' ' -f6 /proc/$$/stat) $$" > "$SANDBOX/reader.session"
                      cat /dev/tty
                      status=$?
                      echo "$status" > "$SANDBOX/reader.status"
                      exit $status
                """)
            let pane = try TmuxPane(columns: 100, rows: 30, directory: sandbox.path, command: [
                "env", "SANDBOX=\(sandbox.path)", "FLOWRUN_E2E_TOKEN=\(sandbox.token)",
                try FlowrunBinary.path(), workflow, "--output", "plain", "--log-dir", sandbox.logDirectory,
            ])
            defer { pane.kill() }
            var screen = ""
            let ended = try pane.poll(until: .seconds(20)) { text in
                screen = text
                return text.contains("flowrun exited:")
            }
            #expect(ended, "flowrun did not end: the task hangs on /dev/tty\n\(screen)")
            #expect(screen.contains("flowrun exited: 1"), "\(screen)")
            let status = sandbox.read("reader.status")?.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(status != nil && status != "0", "cat /dev/tty ended with \(status ?? "nothing")")
            let session = sandbox.read("reader.session")?.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            #expect(session?.count == 2 && session?[0] == session?[1], "with a terminal, the task leads a session of its own (sid pid): \(session ?? [])")
            let record = try sandbox.record()
            #expect(record.status("reader") == "failed", "\(record.overview)")
            let duration = try #require(double(record.task("reader")?["duration"]), "\(record.overview)")
            #expect(duration < 5, "the task took \(duration) s: it waited on the terminal")
        }
    }
}

extension RunEndToEnd.RunJobControlTests {
    /// The real thing: an interactive bash in a tmux pane runs flowrun with
    /// its live view; Ctrl-Z stops flowrun and the counting task (bash says
    /// "Stopped", the cursor is visible again), `fg` resumes both and the
    /// run finishes.
    @Test func ctrlZInATerminalStopsTheLiveViewAndItsTasksAndFgResumesThem() throws {
        let sandbox = try RunSandbox()
        let workflow = try sandbox.write(workflow: """
            tasks:
              count:
                run: |
                  echo $$ > "$SANDBOX/count.pid"
                  for i in $(seq 40); do echo $i >> "$SANDBOX/count"; sleep 0.05; done
            """)
        let bash = try RunSandbox.tool("bash")
        let pane = try TmuxPane(columns: 100, rows: 30, directory: sandbox.path, command: [bash, "--norc", "--noprofile", "-i"])
        defer { pane.kill() }
        let command = ["env", "SANDBOX=\(sandbox.path)", "FLOWRUN_E2E_TOKEN=\(sandbox.token)", try FlowrunBinary.path(), workflow,
                       "--output", "tty", "--log-dir", sandbox.logDirectory].map(TmuxPane.shellQuoted).joined(separator: " ")
        try pane.send(keys: [command, "Enter"])
        let counting = sandbox.waitFor("count", lines: 3)
        try #require(counting, "the task never counted\n\((try? pane.capture()) ?? "")")
        let shell = try #require(sandbox.pid(in: "count.pid"))
        try pane.send(keys: ["C-z"])
        var screen = ""
        let stopped = try pane.poll(until: .seconds(10)) { text in
            screen = text
            return text.contains("Stopped") && Self.state(of: shell) == "T"
        }
        #expect(stopped, "after Ctrl-Z: task \(Self.state(of: shell).map(String.init) ?? "gone")\n\(screen)")
        #expect(try pane.cursorVisible(), "the cursor stays hidden while flowrun is stopped")
        let atStop = sandbox.lines("count").count
        usleep(1_000_000)
        #expect(sandbox.lines("count").count <= atStop + 1, "the task went on counting while flowrun was stopped")
        try pane.send(keys: ["fg", "Enter"])
        let ended = poll(until: .seconds(20)) {
            let runs = (try? FileManager.default.contentsOfDirectory(atPath: sandbox.logDirectory)) ?? []
            return runs.contains { sandbox.exists("record/\($0)/summary.json") }
        }
        #expect(ended, "the run did not end after fg\n\((try? pane.capture()) ?? "")")
        #expect(sandbox.lines("count").count == 40)
        let record = try sandbox.record()
        #expect(record.exitCode == 0 && record.status("count") == "succeeded", "\(record.overview)")
    }
}
