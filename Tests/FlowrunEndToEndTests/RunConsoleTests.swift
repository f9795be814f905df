import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// flowrun's own output (SPEC §7, §11): a reader that leaves or stalls
    /// never stops the run, the console's memory stays bounded whatever a
    /// task prints, and no control character reaches the console raw.
    @Suite struct RunConsoleTests {
        /// `flowrun wf.yaml | head -1` through a real shell pipeline: the run
        /// goes on after `head` left, `finally` runs, the record is whole and
        /// the exit code is the run's (0), not 141 (SIGPIPE).
        @Test func aReaderThatLeavesDoesNotStopTheRun() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  first: {run: "echo first"}
                  slow:
                    needs: first
                    # Starts after head has read its line and left; prints plenty, so
                    # flowrun writes to the closed pipe many times.
                    run: "sleep 1; for i in $(seq 1 2000); do echo slow-line-$i; done; echo done > \\"$SANDBOX/slow.txt\\""
                finally:
                  cleanup: {run: "echo cleaned > \\"$SANDBOX/finally.txt\\""}
                """)
            let flowrun = try FlowrunBinary.path()
            let command = "\(Self.quoted(flowrun)) \(sandbox.arguments(workflow, ["--stream"]).map(Self.quoted).joined(separator: " "))"
                + " | head -1; echo \"${PIPESTATUS[0]}\" > \(Self.quoted(sandbox.file("status")))"
            let outcome = try ChildProcess.run(
                executable: "/bin/bash", arguments: ["-c", command],
                environment: Self.environment(sandbox), directory: sandbox.path,
                stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"), timeout: .seconds(30), launcher: nil)
            #expect(!outcome.timedOut)
            #expect(sandbox.read("stdout")?.split(separator: "\n").count == 1, "\(sandbox.read("stdout") ?? "")")
            let status = sandbox.read("status")?.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(status == "0", "flowrun's exit status: \(status ?? "none"); stderr: \(sandbox.read("stderr") ?? "")")
            #expect(sandbox.exists("slow.txt"), "the task after the reader left did not finish")
            #expect(sandbox.exists("finally.txt"), "finally did not run")
            let record = try sandbox.record()
            #expect(record.summary["exit_code"] as? Int == 0)
            let tasks = record.summary["tasks"] as? [[String: Any]] ?? []
            #expect(Set(tasks.compactMap { $0["status"] as? String }) == ["succeeded"], "\(tasks)")
            #expect(tasks.count == 3)
            #expect(record.events.last??["event"] as? String == "run_finished")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// stdout is a pipe (a FIFO) whose reader holds it open and never
        /// reads, `--stream`, a task printing far more than the pipe holds:
        /// the run's 3 s timeout still fires on time, flowrun exits 124 soon
        /// after (it waits for the console a bounded time only), the record
        /// has every line, and stderr says how many console lines were dropped.
        @Test func aReaderThatNeverReadsDoesNotSlowTheRun() throws {
            let sandbox = try RunSandbox()
            let lines = 50_000  // 1.9 MB: the 64 KiB console pipe fills ~30 times over, and the task ends well inside the 3 s even on a loaded machine
            let workflow = try sandbox.write(workflow: """
                timeout: 3s
                tasks:
                  chatty: {run: "yes 'a line that fills the console pipe' | head -n \(lines)"}
                  sleeper: {run: "sleep 30"}
                """)
            let fifo = sandbox.file("console")
            #expect(mkfifo(fifo, 0o600) == 0)
            // The reader: opened read-write, so opening it never waits; never read.
            let reader = open(fifo, O_RDWR | O_CLOEXEC)
            #expect(reader >= 0)
            defer { close(reader) }
            let outcome = try ChildProcess.run(
                executable: try FlowrunBinary.path(), arguments: sandbox.arguments(workflow, ["--stream"]),
                environment: Self.environment(sandbox), directory: sandbox.path,
                stdoutPath: fifo, stderrPath: sandbox.file("stderr"), timeout: .seconds(40), launcher: nil)
            let stderr = sandbox.read("stderr") ?? ""
            #expect(!outcome.timedOut, "flowrun hung on a reader that never reads")
            #expect(outcome.exitStatus == 124, "stderr: \(stderr)")
            #expect(outcome.wallSeconds < 10, "took \(outcome.wallSeconds) s for a 3 s timeout")
            #expect(stderr.range(of: #"flowrun: [0-9]+ console lines dropped: the reader was not reading"#, options: .regularExpression) != nil, "\(stderr)")
            let record = try sandbox.record()
            #expect(record.summary["exit_code"] as? Int == 124)
            #expect((record.summary["console_lines_dropped"] as? Int ?? 0) > 0, "\(record.summary["console_lines_dropped"] ?? "nil")")
            #expect(record.events.last??["event"] as? String == "run_finished")
            let logPath = try #require(record.task("chatty")?["log"] as? String)
            let log = try String(contentsOfFile: logPath, encoding: .utf8)
            #expect(log.split(separator: "\n").count == lines, "the record lost lines")
        }

        /// stdout a log file opened `>>` that a task appends its own lines to
        /// at the same time, `--stream` of 20,000 lines: every write flowrun
        /// makes to the file ends at a line's end (seen under strace), so no
        /// line of the other writer lands inside one of ours, and none is cut.
        @Test func aLogFileSharedWithAnotherAppenderGetsWholeLines() throws {
            let sandbox = try RunSandbox()
            let strace = try RunSandbox.tool("strace")
            let log = sandbox.file("shared.log")
            let workflow = try sandbox.write(workflow: """
                tasks:
                  chatty: {run: "for i in $(seq 1 20000); do echo chatty-line-$i-padding-padding-padding-padding; done"}
                  appender: {run: "for i in $(seq 1 2000); do echo appender-line-$i-xxxxxxxxxxxxxxxxxxxxxxxx >> \\"$SANDBOX/shared.log\\"; done"}
                """)
            let trace = sandbox.file("trace")
            let command = "\(Self.quoted(strace)) -f -qq -y -x -s 40000 -e trace=write,writev,pwritev2 -e signal=none -o \(Self.quoted(trace)) "
                + "\(Self.quoted(try FlowrunBinary.path())) \(sandbox.arguments(workflow, ["--stream"]).map(Self.quoted).joined(separator: " "))"
                + " >> \(Self.quoted(log))"
            try Self.bash(command, in: sandbox)
            // flowrun's own writes to the log that took bytes: `write(1</…/shared.log>, "c…\n", N) = N`.
            let writes = (sandbox.read("trace") ?? "").split(separator: "\n")
                .filter { $0.contains("(1<\(log)>, ") && !$0.contains(") = -1 ") }
            #expect(writes.count > 2, "flowrun's writes to the log were not seen:\n\(sandbox.read("trace")?.prefix(2000) ?? "")")
            // (-x: a text with a byte beyond ASCII, the summary's dash, is shown all in hex.)
            let cut = writes.filter { line in [#"\n", "#, #"\x0a", "#].allSatisfy { !line.contains($0) } }
            #expect(cut.isEmpty, "\(cut.count) of \(writes.count) writes end inside a line, e.g. \(cut.first?.suffix(120) ?? "")")
            // And so the file: every line whole, both writers' lines all there.
            let lines = (sandbox.read("shared.log") ?? "").split(separator: "\n", omittingEmptySubsequences: false)
            let chatty = lines.filter { $0.wholeMatch(of: /chatty \| chatty-line-[0-9]+-padding-padding-padding-padding/) != nil }
            let appended = lines.filter { $0.wholeMatch(of: /appender-line-[0-9]+-x{24}/) != nil }
            #expect(chatty.count == 20_000 && appended.count == 2000, "\(chatty.count) whole chatty lines, \(appended.count) whole appended lines")
        }

        /// Two runs `--stream` into one pipe (`{ flowrun a & flowrun b; } |`)
        /// whose reader starts late, so each backs up: every write either
        /// makes to the pipe is at most PIPE_BUF (4096) bytes and ends at a
        /// line's end, which a pipe takes in one piece (strace), so the reader
        /// gets every line of both whole; a 16 KiB write to a full pipe was
        /// split where the reader made room and the other run's lines went
        /// inside one of ours.
        @Test func twoRunsSharingAPipeGetEachOthersLinesWhole() throws {
            let sandbox = try RunSandbox()
            let strace = try RunSandbox.tool("strace")
            let lines = 10_000
            let first = try sandbox.write(workflow: """
                tasks:
                  chatty: {run: "yes aaaa-padding-padding-padding-padding-padding | head -n \(lines)"}
                """)
            let second = sandbox.file("second.yaml")
            try String(contentsOfFile: first, encoding: .utf8).replacingOccurrences(of: "aaaa", with: "bbbb")
                .write(toFile: second, atomically: true, encoding: .utf8)
            let flowrun = try FlowrunBinary.path()
            func run(_ workflow: String, _ folder: String) throws -> String {
                try FileManager.default.createDirectory(atPath: sandbox.file(folder), withIntermediateDirectories: true)
                let arguments = sandbox.arguments(workflow, ["--stream"]).map { $0.replacingOccurrences(of: sandbox.logDirectory, with: sandbox.file(folder)) }
                return ([flowrun] + arguments).map(Self.quoted).joined(separator: " ")
            }
            let trace = sandbox.file("trace")
            // The pipe's name (`pipe:[inode]`) tells flowrun's writes to it from its tasks' to theirs.
            let both = "readlink /proc/$BASHPID/fd/1 > \(Self.quoted(sandbox.file("pipe"))); "
                + "\(Self.quoted(strace)) -f -qq -y -x -s 20000 -e trace=write,writev -e signal=none -o \(Self.quoted(trace)) "
                + "/bin/bash -c \(Self.quoted("\(try run(first, "a")) & \(try run(second, "b")); wait"))"
            let command = "{ \(both); } | { sleep 1; cat; } > \(Self.quoted(sandbox.file("out")))"
            try Self.bash(command, in: sandbox)
            let pipe = try #require(sandbox.read("pipe")?.trimmingCharacters(in: .whitespacesAndNewlines))
            let writes = (sandbox.read("trace") ?? "").split(separator: "\n").filter { $0.contains("(1<\(pipe)>, ") }
            #expect(writes.count > 4, "no write to \(pipe) seen:\n\(sandbox.read("trace")?.prefix(2000) ?? "")")
            let large = writes.filter { line in (line.firstMatch(of: #/, ([0-9]+)\) = /#).flatMap { Int($0.1) } ?? 0) > 4096 }
            #expect(large.isEmpty, "\(large.count) of \(writes.count) writes to the pipe hand it more than 4096 bytes")
            let cut = writes.filter { line in [#"\n", "#, #"\x0a", "#].allSatisfy { !line.contains($0) } }
            #expect(cut.isEmpty, "\(cut.count) of \(writes.count) writes end inside a line, e.g. \(cut.first?.suffix(120) ?? "")")
            let received = (sandbox.read("out") ?? "").split(separator: "\n")
            let whole = received.filter { $0.wholeMatch(of: /chatty \| (aaaa|bbbb)-padding-padding-padding-padding-padding/) != nil }
            let broken = received.filter { $0.contains("padding") && $0.wholeMatch(of: /chatty \| (aaaa|bbbb)-padding-padding-padding-padding-padding/) == nil }
            #expect(broken.isEmpty && whole.count == 2 * lines, "\(whole.count) whole lines, \(broken.count) broken, e.g. \(broken.first ?? "")\n\(sandbox.read("stderr") ?? "")")
        }

        /// Fan-out members named from items holding a newline, an ANSI escape,
        /// `::error::` and a bell; a description that would forge a line: no
        /// raw ESC, BEL or line starting with `::error::` reaches the console
        /// in plain output, `--stream`, the live view's lines, JSON lines or the dry run.
        @Test(arguments: [["--output", "plain"], ["--output", "plain", "--stream"], ["--output", "tty", "--stream"],
                          ["--output", "json"], ["--dry-run"], ["--dry-run", "--output", "json"]])
        func controlCharactersFromItemsAndOutputAreShownEscaped(_ options: [String]) throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: #"""
                tasks:
                  intro:
                    description: "fine\n::error::forged by a description"
                    # Fails, so its log tail (this output) is printed too.
                    run: "printf 'plain\\n::error::from output\\n\\033[31mred output\\007\\n'; exit 1"
                    continue_on_error: true
                groups:
                  g:
                    foreach: ["a\nb", "\e[31mred", "::error::x", "bell\a", "wrap\r::error::y"]
                    task:
                      name: "${{ item }}"
                      # Succeed, so their names are among the slowest in the summary.
                      run: "echo \"item=$FLOWRUN_ITEM\"; sleep 0.$FLOWRUN_INDEX"
                """#)
            // `--output` last wins, so each option list chooses its mode.
            let run = try FlowrunBinary.run([workflow, "--log-dir", sandbox.logDirectory] + options,
                                            in: sandbox.path, environment: sandbox.environment)
            run.expectNoCrash()
            let bytes = Array(run.stdout.utf8)
            #expect(!bytes.contains(0x1B), "a raw ESC reached the console\n\(run)")
            #expect(!bytes.contains(0x07), "a raw BEL reached the console\n\(run)")
            #expect(!bytes.contains(0x0D), "a raw CR reached the console\n\(run)")
            let forged = run.stdout.split(separator: "\n").filter { $0.hasPrefix("::") }
            #expect(forged.isEmpty, "lines starting with '::': \(forged)\n\(run)")
            if !options.contains("json") {
                // Shown, escaped, not lost.
                #expect(run.stdout.contains(#"\e[31mred"#), "\(run)")
                #expect(run.stdout.contains(#"a\nb"#), "\(run)")
            }
        }

        /// `--stream` with the live view on a terminal while a task prints
        /// 150 MB (1.5 million lines): flowrun's peak memory stays flat (the
        /// view keeps a few recent lines per task; the log has them all).
        /// The terminal is read all along, as a terminal window would.
        @Test func theLiveViewStaysSmallWhileATaskPrintsALot() throws {
            let sandbox = try RunSandbox()
            let megabytes = 150
            let workflow = try sandbox.write(workflow: """
                tasks:
                  flood: {run: "head -c \(megabytes)M /dev/zero | tr '\\\\0' x | fold -w 99"}
                """)
            let terminal = try PseudoTerminal()
            let reading = TerminalReader(terminal.controller)
            defer { reading.stop() }
            var environment = ProcessInfo.processInfo.environment
            environment["TERM"] = "xterm-256color"
            for (key, value) in sandbox.environment { environment[key] = value }
            let outcome = try ChildProcess.run(
                executable: try FlowrunBinary.path(), arguments: sandbox.arguments(workflow, ["--stream"], output: "tty"),
                environment: environment.map { "\($0.key)=\($0.value)" }, directory: sandbox.path,
                stdoutPath: terminal.devicePath, stderrPath: sandbox.file("stderr"), timeout: .seconds(240),
                launcher: PeakRSSLauncher.path)
            let peak = Double(outcome.peakRSSBytes) / 1_048_576
            print("--stream live view, a task printing \(megabytes) MB: peak RSS \(Int(peak)) MB in \(Int(outcome.wallSeconds)) s")
            #expect(!outcome.timedOut)
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")")
            #expect(outcome.peakRSSIsExact, "no C compiler for the RSS launcher")
            #expect(peak < 48, "peak RSS \(peak) MB")
            #expect(reading.bytes > 0)
            let record = try sandbox.record()
            let logPath = try #require(record.task("flood")?["log"] as? String)
            let attributes = try FileManager.default.attributesOfItem(atPath: logPath)
            #expect((attributes[.size] as? Int ?? 0) >= megabytes << 20, "the log has it all")
        }

        /// Runs `command` with bash in the sandbox (stdout and stderr to its files); it must end in time with 0.
        static func bash(_ command: String, in sandbox: RunSandbox, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let outcome = try ChildProcess.run(
                executable: "/bin/bash", arguments: ["-c", command],
                environment: environment(sandbox), directory: sandbox.path,
                stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"), timeout: .seconds(120), launcher: nil)
            #expect(!outcome.timedOut, sourceLocation: sourceLocation)
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")", sourceLocation: sourceLocation)
        }

        static func environment(_ sandbox: RunSandbox) -> [String] {
            var environment = ProcessInfo.processInfo.environment
            environment["NO_COLOR"] = "1"
            for (key, value) in sandbox.environment { environment[key] = value }
            return environment.map { "\($0.key)=\($0.value)" }
        }

        static func quoted(_ word: String) -> String {
            "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
    }
}

/// Reads a pseudo-terminal's controlling side on a thread of its own and
/// throws the bytes away, as a terminal window keeps up with its program.
final class TerminalReader: @unchecked Sendable {
    // @unchecked: `count` and `running` are only touched under `lock`.
    private let lock = NSLock()
    private var count = 0
    private var running = true
    private let finished = DispatchSemaphore(value: 0)

    init(_ descriptor: Int32) {
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while lock.withLock({ running }) {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) > 0 else { continue }
                let got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if got > 0 { lock.withLock { count += got } } else if got < 0 && errno != EAGAIN && errno != EINTR { usleep(10_000) }
            }
            finished.signal()
        }
    }

    var bytes: Int { lock.withLock { count } }

    func stop() {
        lock.withLock { running = false }
        finished.wait()
    }
}
