import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// `flowrun watch` (SPEC §14, issue 36) with the built binary on real
    /// files. Every wait is a handshake on the record (a run's
    /// `run_finished`), never a sleep; absence of a run is shown by a later
    /// marker change being the very next run.
    @Suite struct WatchTests {
        /// A watch started in `sandbox`, its records under `record/`.
        static func watch(_ sandbox: RunSandbox, _ text: String, _ extra: [String] = []) throws -> LiveFlowrun {
            let workflow = try sandbox.write(workflow: text)
            return try LiveFlowrun(
                ["watch", workflow, "--log-dir", sandbox.logDirectory, "--output", "plain"] + extra,
                environment: sandbox.environment, directory: sandbox.path, hardTimeout: .seconds(90))
        }

        /// The watch's finished runs (those with a summary), oldest first (by run_started's time, not by name).
        static func runs(_ sandbox: RunSandbox) -> [RunRecordFiles] {
            runFolders(in: sandbox.logDirectory)
                .filter { FileManager.default.fileExists(atPath: sandbox.logDirectory + "/" + $0 + "/summary.json") }
                .compactMap { try? RunRecordFiles(directory: sandbox.logDirectory + "/" + $0) }
                .sorted { startTime($0) < startTime($1) }
        }

        static func startTime(_ run: RunRecordFiles) -> Double {
            (run.events("run_started").first?["time"] as? String).flatMap(isoSeconds) ?? 0
        }

        static func isoSeconds(_ text: String) -> Double? {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.date(from: text)?.timeIntervalSince1970
        }

        /// Waits until `count` runs have finished (each record's `run_finished`).
        static func waitForRuns(_ sandbox: RunSandbox, _ count: Int, timeout: Duration = .seconds(30)) -> Bool {
            poll(until: timeout, every: .milliseconds(10)) {
                runs(sandbox).count >= count
            }
        }

        static func started(_ run: RunRecordFiles) -> Set<String> { Set(run.names("task_started")) }

        static func write(_ sandbox: RunSandbox, _ name: String, _ text: String) throws {
            _ = try sandbox.directory.write(text, to: name)
        }

        @Test func editingOneOfFiftySourcesRunsExactlyThatTaskAndItsDependentsWithinASecond() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            var tasks = "tasks:\n"
            for number in 0..<50 {
                let name = String(format: "t%02d", number)
                try Self.write(sandbox, "src/\(name).txt", "\(number)\n")
                tasks += "  \(name):\n    sources: [\"src/\(name).txt\"]\n    run: cat src/\(name).txt\n"
            }
            tasks += "  report:\n    needs: [t07]\n    run: echo report\n"
            let live = try Self.watch(sandbox, tasks)
            #expect(Self.waitForRuns(sandbox, 1), "the first run never finished")
            #expect(Self.started(Self.runs(sandbox)[0]).count == 51)

            try Self.write(sandbox, "src/t07.txt", "seven\n")
            let written = Date().timeIntervalSince1970
            #expect(Self.waitForRuns(sandbox, 2), "no run after the change")
            let second = Self.runs(sandbox)[1]
            #expect(Self.started(second) == ["t07", "report"], "\(second.names("task_started"))")
            #expect(second.events("run_started").first?["trigger"] as? String == "src/t07.txt")
            let latency = Self.startTime(second) - written
            #expect(latency < 1.0, "the run started \(latency)s after close_write")
            print("watch: rerun started \(String(format: "%.3f", latency))s after close_write")
            live.signalGroup(SIGINT)
            let ended = live.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aBurstOfWritesIsOneRunAndGeneratedFilesNeverTrigger() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            try Self.write(sandbox, "src/a.txt", "a\n")
            try FileManager.default.createDirectory(atPath: sandbox.file("marker"), withIntermediateDirectories: true)
            try Self.write(sandbox, "marker/m.txt", "m\n")
            let live = try Self.watch(sandbox, """
                tasks:
                  build:
                    sources: ["src/*.txt"]
                    generates: ["src/out.txt"]
                    run: cat src/a.txt > src/out.txt
                  mark:
                    sources: ["marker/m.txt"]
                    run: echo marked
                """)
            #expect(Self.waitForRuns(sandbox, 1))
            // 100 writes, each opened, written and closed (a close_write each), in about 50 ms: one change.
            let path = sandbox.file("src/a.txt")
            let start = ContinuousClock.now
            for number in 0..<100 {
                let descriptor = open(path, O_WRONLY | O_TRUNC)
                let text = "\(number)\n"
                _ = text.withCString { Glibc.write(descriptor, $0, strlen($0)) }
                close(descriptor)
                usleep(400)
            }
            let burst = (ContinuousClock.now - start).seconds
            #expect(burst < 0.6, "the burst took \(burst)s")
            #expect(Self.waitForRuns(sandbox, 2))
            // The build wrote its generated file (in a watched folder): no run for that. Then
            // a write to the generated file by hand: none either. The marker's change is the next run.
            try Self.write(sandbox, "src/out.txt", "by hand\n")
            try Self.write(sandbox, "marker/m.txt", "m2\n")
            #expect(Self.waitForRuns(sandbox, 3))
            let runs = Self.runs(sandbox)
            #expect(runs.count == 3, "a run too many: \(runs.map { $0.events("run_started").first?["trigger"] ?? "first" })")
            #expect(Self.started(runs[1]) == ["build"])
            #expect(runs[1].events("run_started").first?["trigger"] as? String == "src/a.txt")
            #expect(Self.started(runs[2]) == ["mark"])
            print("watch: 100 writes in \(String(format: "%.3f", burst))s gave one run")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
        }

        @Test func aFileInANewSubfolderIsSeen() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            try Self.write(sandbox, "src/a.c", "a\n")
            let live = try Self.watch(sandbox, """
                tasks:
                  compile:
                    sources: ["src/**/*.c"]
                    run: find src -name '*.c' | sort
                """)
            #expect(Self.waitForRuns(sandbox, 1))
            try FileManager.default.createDirectory(atPath: sandbox.file("src/new/deeper"), withIntermediateDirectories: true)
            try Self.write(sandbox, "src/new/deeper/b.c", "b\n")
            #expect(Self.waitForRuns(sandbox, 2), "the file in the new folder was not seen")
            let second = Self.runs(sandbox)[1]
            #expect(second.events("run_started").first?["trigger"] as? String == "src/new/deeper/b.c")
            #expect(second.stdout("compile") == "src/a.c\nsrc/new/deeper/b.c")
            // And the new folder stays watched.
            try Self.write(sandbox, "src/new/deeper/b.c", "b2\n")
            #expect(Self.waitForRuns(sandbox, 3))
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
        }

        @Test func aChangeDuringARunCancelsOnlyTheAffectedRunningTaskAndTheNextRunStartsItAgain() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            try Self.write(sandbox, "src/slow.txt", "1\n")
            try Self.write(sandbox, "src/other.txt", "1\n")
            let live = try Self.watch(sandbox, """
                tasks:
                  slow:
                    sources: ["src/slow.txt"]
                    run: echo started >> "$SANDBOX/slow-starts"; sleep 60
                  other:
                    sources: ["src/other.txt"]
                    run: echo started >> "$SANDBOX/other-starts"; while [ ! -e "$SANDBOX/release" ]; do sleep 0.02; done
                """)
            #expect(sandbox.waitFor("slow-starts") && sandbox.waitFor("other-starts"))
            try Self.write(sandbox, "src/slow.txt", "2\n")
            // `other` is unaffected: it goes on, and the run ends when it does.
            try Self.write(sandbox, "release", "")
            #expect(sandbox.waitFor("slow-starts", lines: 2, timeout: .seconds(30)), "slow was not started again")
            let first = Self.runs(sandbox)[0]
            #expect(first.statuses == ["slow": "cancelled", "other": "succeeded"])
            #expect(first.finished("slow")?["reason"] as? String == "sources_changed")
            #expect((try String(contentsOfFile: sandbox.file("other-starts"), encoding: .utf8)) == "started\n", "other ran once")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aPythonServerIsRestartedOnItsChangeWithItsPortFreeAndNothingIsLeftAfterCtrlC() throws {
            _ = try RunSandbox.tool("python3")
            let sandbox = try RunSandbox()
            let port = try freePort()
            try FileManager.default.createDirectory(atPath: sandbox.file("site"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: sandbox.file("tests"), withIntermediateDirectories: true)
            try Self.write(sandbox, "site/index.html", "one\n")
            try Self.write(sandbox, "tests/check", "1\n")
            let live = try Self.watch(sandbox, """
                tasks:
                  web:
                    service: true
                    sources: ["site/**/*"]
                    run: cd site && exec python3 -m http.server \(port) --bind 127.0.0.1
                    ready: { tcp: "127.0.0.1:\(port)" }
                  test:
                    needs: [web]
                    sources: ["site/**/*", "tests/*"]
                    run: python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:\(port)/index.html").read().decode().strip())'
                """, ["--stream"])
            #expect(Self.waitForRuns(sandbox, 1))
            // A change to the tests only: the server keeps running (started once).
            try Self.write(sandbox, "tests/check", "2\n")
            #expect(Self.waitForRuns(sandbox, 2))
            #expect(Self.started(Self.runs(sandbox)[1]) == ["test"])
            // A change to the site: the server is stopped, its port freed, and started again.
            try Self.write(sandbox, "site/index.html", "two\n")
            #expect(Self.waitForRuns(sandbox, 3))
            let third = Self.runs(sandbox)[2]
            #expect(Self.started(third) == ["web", "test"])
            #expect(third.statuses["web"] == "succeeded" && third.statuses["test"] == "succeeded", "\(third.statuses)")
            #expect(third.stdout("test") == "two")
            live.signalGroup(SIGINT)
            let ended = live.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(!ended.stdout.contains("Address already in use") && !ended.stderr.contains("Address already in use"), "\(ended)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// The watch limit, lowered to 3 in a user namespace of the test's own
        /// (`user.max_inotify_watches`), with 5 folders to watch: said, never a silent miss.
        @Test func theWatchLimitIsSaidNamingTheSysctl() throws {
            let unshare = try RunSandbox.tool("unshare")
            let sandbox = try RunSandbox()
            for folder in ["src/a", "src/b", "src/c", "src/d"] {
                try FileManager.default.createDirectory(atPath: sandbox.file(folder), withIntermediateDirectories: true)
            }
            let workflow = try sandbox.write(workflow: "tasks:\n  build:\n    sources: [\"src/**/*.c\"]\n    run: echo built\n")
            let outcome = try ChildProcess.run(
                executable: unshare,
                arguments: ["-Ur", "/bin/sh", "-c", "echo 3 > /proc/sys/user/max_inotify_watches && exec \"$0\" \"$@\"",
                            try FlowrunBinary.path(), "watch", workflow, "--log-dir", sandbox.logDirectory, "--output", "plain"],
                environment: sandbox.environment.map { "\($0.key)=\($0.value)" } + ["PATH=/usr/bin:/bin"],
                directory: sandbox.path, stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"), timeout: .seconds(30), launcher: nil)
            let stderr = sandbox.read("stderr") ?? ""
            #expect(outcome.exitStatus == 1, "\(stderr)")
            #expect(stderr.contains("the inotify watch limit is reached; raise it with sysctl fs.inotify.max_user_watches=524288"), "\(stderr)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aMemberChangeRunsThatMemberAndWhatNeedsItsGroupAGroupNeedChangeRunsTheGroup() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            for name in ["a", "b", "x"] { try Self.write(sandbox, "src/\(name)", "1\n") }
            let live = try Self.watch(sandbox, """
                tasks:
                  x: { sources: [src/x], run: echo x }
                  after: { needs: [checks], run: echo after }
                groups:
                  checks:
                    needs: [x]
                    tasks:
                      a: { sources: [src/a], run: echo a }
                      b: { run: echo b }
                """)
            #expect(Self.waitForRuns(sandbox, 1))
            try Self.write(sandbox, "src/a", "2\n")
            #expect(Self.waitForRuns(sandbox, 2))
            let second = Self.runs(sandbox)[1]
            #expect(Self.started(second) == ["a", "after"], "\(second.names("task_started"))")
            #expect(second.events("group_finished").first?["group"] as? String == "checks")
            try Self.write(sandbox, "src/x", "2\n")
            #expect(Self.waitForRuns(sandbox, 3))
            // The group's need changed: the group runs again whole (a is up to date, b has no sources).
            #expect(Self.started(Self.runs(sandbox)[2]) == ["x", "b", "after"], "\(Self.runs(sandbox)[2].names("task_started"))")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
        }

        @Test func watchRefusesWhatItCannotRunAgain() throws {
            let sandbox = try RunSandbox()
            let noSources = try sandbox.write(workflow: "tasks:\n  a:\n    run: echo a\n")
            let run = try FlowrunBinary.run(["watch", noSources], in: sandbox.path)
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr == "flowrun watch: no task of the targets has sources:, so no change would run anything again; add sources: globs\n")
        }
    }
}
