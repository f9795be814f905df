import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEndParallel {
    /// SPEC §11 (the record's privacy) and §7 (run record): the record is
    /// private whatever the umask, never written through a link or a swapped
    /// folder, refused under a folder another user controls, and a record
    /// that cannot be written fails the run loudly. Run as root in CI; the
    /// other user is uid 65534, through `setpriv`.
    @Suite struct RunRecordPrivacyTests {
        static let otherUser: Int32 = 65534

        // MARK: Modes

        /// Folders `0700` and files `0600`, whatever the umask: every entry of
        /// `.flowrun/` is walked (logs of a retried task and of fan-out
        /// members, an outputs file the task itself created, events, summary).
        @Test(arguments: [0o022, 0o077, 0o277] as [Int])
        func everyFolderIs0700AndEveryFile0600WhateverTheUmask(umask mask: Int) throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  printer: {run: "echo printed; echo to-stderr >&2"}
                  writer: {run: 'echo "k=v" >> "$FLOWRUN_OUTPUT"; echo wrote'}
                  retried:
                    retries: 1
                    retry_delay: 10ms
                    run: 'echo "attempt $FLOWRUN_ATTEMPT"; [ "$FLOWRUN_ATTEMPT" = 2 ]'
                groups:
                  fan:
                    foreach: [one, two]
                    task: {run: 'echo "member $FLOWRUN_ITEM"; echo "v=$FLOWRUN_ITEM" >> "$FLOWRUN_OUTPUT"'}
                """)
            // No --log-dir: `.flowrun/` and `.flowrun/runs/` are made by flowrun too.
            let run = try Self.flowrun(
                wrappedIn: ["/bin/sh", "-c", "umask \(String(mask, radix: 8)); exec \"$0\" \"$@\""],
                [workflow, "--output", "plain"], in: sandbox.path, environment: sandbox.environment)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let entries = Self.walk(sandbox.file(".flowrun"))
            let files = entries.filter { $0.kind == S_IFREG }
            let folders = entries.filter { $0.kind == S_IFDIR }
            // events, summary, logs/small.pack and its index (the 5 short tasks' small logs), 3 outputs files.
            #expect(files.count == 7, "\(entries.map(\.path))")
            #expect(folders.count == 6, "\(entries.map(\.path))")  // .flowrun, runs, RUN_ID, logs, logs/000, outputs
            for entry in entries {
                switch entry.kind {
                case S_IFDIR: #expect(entry.mode == 0o700, "\(entry.path) is \(String(entry.mode, radix: 8)) under umask \(String(mask, radix: 8))")
                case S_IFREG: #expect(entry.mode == 0o600, "\(entry.path) is \(String(entry.mode, radix: 8)) under umask \(String(mask, radix: 8))")
                // `latest`: a link (whose mode means nothing on Linux) to this run's folder, beside it.
                case S_IFLNK where entry.path.hasSuffix("/runs/latest"):
                    #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: entry.path)).map(runFolders(in: sandbox.file(".flowrun/runs")).contains) == true, "\(entry.path)")
                default: Issue.record("\(entry.path) is neither a folder nor a file")
                }
            }
        }

        // MARK: Folders another user controls

        /// How the folder the record would go in is made hostile.
        enum Hostile: String, CaseIterable, CustomTestStringConvertible {
            case flowrunOfAnotherUser, flowrunWritableByOthers, runsOfAnotherUser
            case logDirOfAnotherUser, logDirWritableByGroup, missingLogDirUnderAnotherUsersFolder
            var testDescription: String { rawValue }
        }

        /// A `.flowrun/`, `.flowrun/runs/` or `--log-dir` that another user
        /// owns (made by uid 65534 in a shared sticky folder, as in /tmp), or
        /// that others may write without the sticky bit: refused with exit 2
        /// and a message naming the folder and why; nothing is written there
        /// and no task runs.
        @Test(arguments: Hostile.allCases)
        func aFolderAnotherUserControlsIsRefused(_ hostile: Hostile) throws {
            let sandbox = try RunSandbox()
            try Self.shareWithOtherUser(sandbox)
            let shared = sandbox.file("shared")
            let workflow = try sandbox.write(workflow: "tasks:\n  ran: {run: 'touch \"$SANDBOX/task-ran\"'}\n")
            var arguments = [workflow, "--output", "plain"]
            let named: String      // what the message must name
            let watched: String    // the folder nothing may be written in
            let why: String
            switch hostile {
            case .flowrunOfAnotherUser:
                try Self.asOtherUser("mkdir", shared + "/.flowrun")
                (named, watched, why) = (".flowrun", shared + "/.flowrun", "belongs to uid 65534")
            case .flowrunWritableByOthers:
                try Self.makeFolder(shared + "/.flowrun", mode: 0o777)
                (named, watched, why) = (".flowrun", shared + "/.flowrun", "writable by others (mode 0777) without the sticky bit")
            case .runsOfAnotherUser:
                try Self.makeFolder(shared + "/.flowrun", mode: 0o700)
                try Self.makeFolder(shared + "/.flowrun/runs", mode: 0o700)
                #expect(chown(shared + "/.flowrun/runs", uid_t(Self.otherUser), gid_t(Self.otherUser)) == 0)
                (named, watched, why) = (".flowrun/runs", shared + "/.flowrun/runs", "belongs to uid 65534")
            case .logDirOfAnotherUser:
                try Self.asOtherUser("mkdir", shared + "/records")
                arguments += ["--log-dir", shared + "/records"]
                (named, watched, why) = (shared + "/records", shared + "/records", "belongs to uid 65534")
            case .logDirWritableByGroup:
                try Self.makeFolder(shared + "/records", mode: 0o770)
                arguments += ["--log-dir", shared + "/records"]
                (named, watched, why) = (shared + "/records", shared + "/records", "writable by its group (mode 0770) without the sticky bit")
            case .missingLogDirUnderAnotherUsersFolder:
                try Self.asOtherUser("mkdir", shared + "/theirs")
                arguments += ["--log-dir", shared + "/theirs/mine/runs"]
                (named, watched, why) = (shared + "/theirs", shared + "/theirs", "belongs to uid 65534")
            }
            let run = try FlowrunBinary.run(arguments, in: shared, environment: sandbox.environment)
            run.expectNoCrash()
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains(named) && run.stderr.contains(why), "the message names \(named) and says \(why)\n\(run)")
            #expect(Self.walk(watched).count == 1, "something was written in \(watched): \(Self.walk(watched).map(\.path))")
            #expect(!sandbox.exists("task-ran"), "a task ran")
        }

        /// The same shared folder with the sticky bit (like /tmp), a
        /// `.flowrun/` that is root's and sticky, or a current directory of
        /// another user's (a checkout mounted into a container, run as root)
        /// where flowrun makes its own `.flowrun/`: accepted.
        @Test func foldersNoOtherUserControlsAreAccepted() throws {
            let sandbox = try RunSandbox()
            try Self.shareWithOtherUser(sandbox)
            let shared = sandbox.file("shared")
            let workflow = try sandbox.write(workflow: "tasks:\n  ran: {run: 'touch \"$SANDBOX/task-ran\"'}\n")
            let inSticky = try FlowrunBinary.run([workflow, "--log-dir", shared, "--output", "plain"], in: sandbox.path, environment: sandbox.environment)
            #expect(inSticky.exitStatus == 0, "\(inSticky)")
            try Self.makeFolder(shared + "/.flowrun", mode: 0o1777)
            let underSticky = try FlowrunBinary.run([workflow, "--output", "plain"], in: shared, environment: sandbox.environment)
            #expect(underSticky.exitStatus == 0, "\(underSticky)")
            #expect(Self.walk(shared + "/.flowrun/runs").filter { $0.kind == S_IFDIR }.count == 5, "runs, RUN_ID, logs, logs/000, outputs")
            try Self.asOtherUser("mkdir", "-m", "755", shared + "/checkout")
            let inTheirs = try FlowrunBinary.run([workflow, "--output", "plain"], in: shared + "/checkout", environment: sandbox.environment)
            #expect(inTheirs.exitStatus == 0, "\(inTheirs)")
            var info = stat()
            #expect(stat(shared + "/checkout/.flowrun", &info) == 0 && info.st_uid == geteuid() && info.st_mode & 0o7777 == 0o700)
        }

        /// `--log-dir ''` would put the record under `/`: a command-line error.
        @Test func anEmptyLogDirIsACommandLineError() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: "tasks:\n  ran: {run: 'touch \"$SANDBOX/task-ran\"'}\n")
            let run = try FlowrunBinary.run([workflow, "--log-dir", ""], in: sandbox.path, environment: sandbox.environment)
            run.expectNoCrash()
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("--log-dir"), "\(run)")
            #expect(!sandbox.exists("task-ran"), "a task ran")
        }

        // MARK: Links and swaps

        /// The first task moves the run folder away and puts a link to an
        /// attacker's folder (with `logs/`, `logs/000/` and `outputs/` ready) in its
        /// place, as a racing attacker would right after the folder was made.
        /// Later tasks' logs, outputs, events and the summary still go to the
        /// run's own folder; nothing lands in the attacker's.
        @Test func aRunFolderSwappedForALinkIsNotFollowed() throws {
            let sandbox = try RunSandbox()
            try Self.makeFolder(sandbox.file("attacker"), mode: 0o777)
            try Self.makeFolder(sandbox.file("attacker/logs"), mode: 0o777)
            try Self.makeFolder(sandbox.file("attacker/outputs"), mode: 0o777)
            try Self.makeFolder(sandbox.file("attacker/logs/000"), mode: 0o777)
            let run = try sandbox.run("""
                tasks:
                  swap:
                    run: |
                      folder="$SANDBOX/record/$FLOWRUN_RUN_ID"
                      mv "$folder" "$SANDBOX/moved" && ln -s "$SANDBOX/attacker" "$folder"
                  later:
                    needs: swap
                    run: 'echo "token=later-secret"; echo "k=later-output" >> "$FLOWRUN_OUTPUT"'
                  last:
                    needs: later
                    run: echo read ${{ tasks.later.outputs.k }}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let attacker = Self.walk(sandbox.file("attacker")).map(\.path)
            #expect(attacker.count == 4, "written into the attacker's folder: \(attacker)")
            let record = try RunRecordFiles(directory: sandbox.file("moved"))
            #expect(record.statuses == ["swap": "succeeded", "later": "succeeded", "last": "succeeded"], "\(record.overview)")
            #expect(record.stdout("last") == "read later-output")
            #expect(record.outputs("later") == ["k": "later-output"])
            // Its small log is in the moved folder's logs/small.pack.
            #expect(record.logText("later") == "token=later-secret\n", "\(record.logPath("later"))")
            #expect(record.events("run_finished").count == 1, "\(record.overview)")
        }

        /// Links planted where record files will go (here by a task, inside
        /// the folder, for the next task's index): the log is not written
        /// through one (the task fails, saying why), an outputs link to a
        /// private file is not read, and the summary replaces its links
        /// instead of writing through them.
        @Test func linksPlantedAtRecordFilesAreNotFollowed() throws {
            let sandbox = try RunSandbox()
            for name in ["target-log", "target-summary", "target-summary-tmp"] { try sandbox.directory.write("original\n", to: name) }
            try sandbox.directory.write("db_password=hunter2\n", to: "private")
            let run = try sandbox.run("""
                tasks:
                  plant:
                    run: |
                      folder="$SANDBOX/record/$FLOWRUN_RUN_ID"
                      mkdir "$folder/logs/000"
                      for index in 0 1 2 3 4 5; do
                        stem=$(printf '%06d-victim' $index)
                        ln -s "$SANDBOX/target-log" "$folder/logs/000/$stem.log"
                        ln -s "$SANDBOX/private" "$folder/outputs/$stem.1"
                      done
                      ln -s "$SANDBOX/target-summary-tmp" "$folder/summary.json.tmp"
                      ln -s "$SANDBOX/target-summary" "$folder/summary.json"
                  victim:
                    needs: plant
                    # Past what a packed log holds: it goes to its own file, where the link is.
                    run: 'touch "$(dirname "$FLOWRUN_OUTPUT")/written"; head -c 5000 /dev/zero | tr "\\0" v; echo "token=victim-secret"'
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "the victim's log could not be made\n\(run)")
            for name in ["target-log", "target-summary", "target-summary-tmp"] {
                #expect(sandbox.read(name) == "original\n", "\(name) was written through a link")
            }
            let record = try sandbox.record()
            #expect(record.status("victim") == "failed", "\(record.overview)")
            let reason = record.finished("victim")?["reason"] as? String ?? ""
            #expect(reason.contains("victim.log: File exists"), "\(record.overview)")
            #expect(record.outputs("victim").isEmpty, "an outputs link was read: \(record.outputs("victim"))")
            var summaryInfo = stat()
            #expect(lstat(record.directory + "/summary.json", &summaryInfo) == 0 && summaryInfo.st_mode & S_IFMT == S_IFREG)
            #expect(!FileManager.default.fileExists(atPath: record.directory + "/summary.json.tmp"))
            for entry in Self.walk(record.directory) where entry.kind == S_IFREG {
                #expect(!(ProcessProbe.text(entry.path) ?? "").contains("hunter2"), "\(entry.path) holds the private file's content")
            }
        }

        /// `$FLOWRUN_OUTPUT` is an absolute path (flowrun's handle on the run
        /// folder), so a task with its own `cwd:` writes its outputs too,
        /// with the record in the default, relative `.flowrun/runs`.
        @Test func outputsAreWrittenFromATasksOwnWorkingDirectory() throws {
            let sandbox = try RunSandbox()
            #expect(mkdir(sandbox.file("sub"), 0o700) == 0)
            let workflow = try sandbox.write(workflow: """
                tasks:
                  writer: {cwd: sub, run: 'echo "k=from-sub" >> "$FLOWRUN_OUTPUT"'}
                  reader: {needs: writer, run: 'printf "%s" ${{ tasks.writer.outputs.k }} > "$SANDBOX/read"'}
                """)
            let run = try FlowrunBinary.run([workflow, "--output", "plain"], in: sandbox.path, environment: sandbox.environment)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.read("read") == "from-sub")
        }

        /// Runs started together in one folder (most in the same second) each
        /// get their own folder, named by their start to the microsecond and 48 random bits.
        @Test func runsStartedTogetherGetTheirOwnFolders() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: "tasks:\n  id: {run: 'echo \"$FLOWRUN_RUN_ID\"'}\n")
            let runs = try (0..<8).map { _ in
                try LiveFlowrun(sandbox.arguments(workflow, []), environment: sandbox.environment, directory: sandbox.path, hardTimeout: .seconds(30))
            }
            for run in runs {
                let ended = run.finish()
                #expect(ended.exitStatus == 0, "\(ended)")
            }
            let folders = runFolders(in: sandbox.logDirectory)
            #expect(folders.count == 8, "\(folders)")
            let seconds = Set(folders.map { $0.prefix(15) })
            print("run-record: 8 runs started together in \(seconds.count) distinct second(s)")
            for folder in folders {
                #expect(isMicrosecondRunID(folder), "\(folder)")
                let record = try RunRecordFiles(directory: sandbox.logDirectory + "/" + folder)
                #expect(record.events("run_started").count == 1 && record.events("run_finished").count == 1, "\(record.overview)")
                #expect(record.stdout("id") == folder, "a run's task saw another run's id")
            }
        }

        // MARK: Record write failures

        /// What hits the file size limit (`prlimit --fsize`).
        enum Limited: String, CaseIterable, CustomTestStringConvertible {
            /// `eventsInBackground`: a fan-out's events come in batches big
            /// enough to be encoded and written on the events file's own queue.
            case events, eventsInBackground, log, summary
            var testDescription: String { rawValue }
        }

        /// A record that hits the file size limit fails the run (exit 1),
        /// with one message on stderr naming the file and the reason;
        /// events.jsonl keeps whole lines only, summary.json is whole or
        /// absent. flowrun runs with SIGXFSZ ignored (as from a shell's
        /// `trap "" XFSZ`), so a write past the limit fails with EFBIG.
        @Test(arguments: Limited.allCases)
        func aRecordThatCannotBeWrittenFailsTheRun(_ limited: Limited) throws {
            let sandbox = try RunSandbox()
            let (limit, tasks): (Int, String)
            switch limited {
            case .events:  // 40 short tasks: ~10 KB of events
                (limit, tasks) = (3000, (0..<40).map { "  t\($0): {run: 'echo line \($0)'}" }.joined(separator: "\n"))
            case .eventsInBackground:  // 5,000 members that end as they start: ~350 KB of events, in batches of hundreds
                (limit, tasks) = (60_000, "  list: {run: 'true'}\ngroups:\n  work:\n    foreach: { range: [1, 5000] }\n    task: {sleep: 0s}")
            case .log:  // one log of 20 KB
                (limit, tasks) = (8192, "  big: {run: 'head -c 20000 /dev/zero | tr \"\\\\0\" x; echo'}")
            case .summary:  // 6 logs of 2.5 KB, each its own file (the task runs past 0.1 s), and their stdout in the summary: 15 KB
                (limit, tasks) = (6000, (0..<6).map { "  t\($0): {run: 'head -c 2500 /dev/zero | tr \"\\\\0\" y; echo; sleep 0.3'}" }.joined(separator: "\n"))
            }
            let workflow = try sandbox.write(workflow: "tasks:\n" + tasks + "\n")
            let run = try Self.flowrun(
                wrappedIn: [try Self.tool("prlimit"), "--fsize=\(limit)", "/bin/sh", "-c", "trap '' XFSZ; exec \"$0\" \"$@\""],
                sandbox.arguments(workflow, [], output: "json"), in: sandbox.path, environment: sandbox.environment)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let folders = runFolders(in: sandbox.logDirectory)
            let directory = sandbox.logDirectory + "/" + (folders.first ?? "none")
            let path = switch limited {
            case .events, .eventsInBackground: directory + "/events.jsonl"
            case .log: directory + "/logs/000/000000-big.log"
            case .summary: directory + "/summary.json"
            }
            let messages = run.stderr.split(separator: "\n").filter { $0.contains("run record") }
            #expect(messages == ["flowrun: the run record is incomplete: cannot write \(path): File too large"], "\(run)")
            let events = ProcessProbe.text(directory + "/events.jsonl") ?? ""
            #expect(events.hasSuffix("\n"), "events.jsonl ends mid-line: \(events.suffix(200))")
            for line in events.split(separator: "\n") {
                #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "not a whole event: \(line)")
            }
            if let summary = FileManager.default.contents(atPath: directory + "/summary.json") {
                #expect((try? JSONSerialization.jsonObject(with: summary)) is [String: Any], "summary.json is partial (\(summary.count) bytes)")
            }
            #expect(!FileManager.default.fileExists(atPath: directory + "/summary.json.tmp"), "a temporary summary was left")
            if limited == .summary {
                #expect(!FileManager.default.fileExists(atPath: directory + "/summary.json"))
                #expect(events.contains("\"event\":\"run_finished\""), "events.jsonl is whole")
            }
        }

        // MARK: Helpers

        /// The absolute path of a tool the test needs; a missing one fails the test by name.
        static func tool(_ name: String) throws -> String {
            let found = ["/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
            return try #require(found, "the test needs \(name), which is not installed")
        }

        /// Runs flowrun as the last program of `wrapper` (which ends by
        /// exec'ing `"$0" "$@"`, perhaps as another user: the copy any user can run).
        static func flowrun(wrappedIn wrapper: [String], _ arguments: [String], in directory: String,
                            environment overrides: [String: String], timeout: Duration = .seconds(30)) throws -> FlowrunRun {
            let binary = try FlowrunBinary.pathForAnyUser()
            let scratch = try TemporaryDirectory(prefix: "flowrun-wrapped")
            var environment = ProcessInfo.processInfo.environment
            environment["NO_COLOR"] = "1"
            environment.merge(overrides) { _, override in override }
            let outcome = try ChildProcess.run(
                executable: wrapper[0], arguments: Array(wrapper.dropFirst()) + [binary] + arguments,
                environment: environment.map { "\($0.key)=\($0.value)" }, directory: directory,
                stdoutPath: scratch.path + "/stdout", stderrPath: scratch.path + "/stderr", timeout: timeout, launcher: nil)
            func text(_ name: String) -> String { ProcessProbe.text(scratch.path + "/" + name) ?? "" }
            return FlowrunRun(
                arguments: wrapper + ["flowrun"] + arguments, stdout: text("stdout"), stderr: text("stderr"),
                exitStatus: outcome.exitStatus, signal: outcome.signal, timedOut: outcome.timedOut,
                wallSeconds: outcome.wallSeconds, peakRSSBytes: outcome.peakRSSBytes, peakRSSIsExact: false)
        }

        /// Lets uid 65534 reach the sandbox, and makes `shared/` in it a
        /// folder anyone may write, with the sticky bit (like /tmp).
        static func shareWithOtherUser(_ sandbox: RunSandbox) throws {
            #expect(chmod(sandbox.path, 0o711) == 0)
            try makeFolder(sandbox.file("shared"), mode: 0o1777)
        }

        /// Runs a command as uid/gid 65534 with no supplementary groups.
        static func asOtherUser(_ command: String, _ arguments: String...) throws {
            let setpriv = try tool("setpriv")
            let scratch = try TemporaryDirectory(prefix: "flowrun-other")
            let outcome = try ChildProcess.run(
                executable: setpriv, arguments: ["--reuid=\(otherUser)", "--regid=\(otherUser)", "--clear-groups", command] + arguments,
                environment: ["PATH=/usr/bin:/bin"], directory: "/", stdoutPath: scratch.path + "/out", stderrPath: scratch.path + "/err",
                timeout: .seconds(10), launcher: nil)
            try #require(outcome.exitStatus == 0, "setpriv … \(command) \(arguments) failed (the test runs as root in CI): \(ProcessProbe.text(scratch.path + "/err") ?? "")")
        }

        /// mkdir, then chmod: the mode exactly, whatever the test's umask.
        static func makeFolder(_ path: String, mode: mode_t) throws {
            try #require(mkdir(path, 0o700) == 0, "mkdir \(path): \(String(cString: strerror(errno)))")
            try #require(chmod(path, mode) == 0, "chmod \(path): \(String(cString: strerror(errno)))")
        }

        struct Entry {
            var path: String
            var kind: mode_t
            var mode: mode_t
        }

        /// `path` and everything under it, with lstat's type and permission bits (links not followed).
        static func walk(_ path: String) -> [Entry] {
            var info = stat()
            guard lstat(path, &info) == 0 else { return [] }
            var entries = [Entry(path: path, kind: info.st_mode & S_IFMT, mode: info.st_mode & 0o7777)]
            if info.st_mode & S_IFMT == S_IFDIR {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                    entries += walk(path + "/" + name)
                }
            }
            return entries
        }
    }
}
