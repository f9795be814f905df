import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private extension String {
    /// Whether the text from the `offset`th character on starts with `prefix`.
    func hasPrefix(_ prefix: String, after offset: Int) -> Bool {
        count > offset && dropFirst(offset).hasPrefix(prefix)
    }
}

extension RunEndToEnd {
    /// `--output tty` in a real terminal: flowrun runs in a detached tmux
    /// pane (a private server, 60×30), and the pane is read with
    /// `capture-pane` while it runs and after it ends (SPEC §7, issue 5).
    @Suite struct LiveViewTests {
        /// `workflows/downloads.yaml` with each download three times faster
        /// (0.3–1 s): the same 100 members, 10 at a time, join and report.
        static func fastDownloads() throws -> String {
            let recipe = try String(contentsOfFile: WorkflowsTests.folder + "/downloads.yaml", encoding: .utf8)
            let slow = "(1 + 2 * r / 255) / 10"
            try #require(recipe.contains(slow), "downloads.yaml no longer computes its step as \(slow); update this test")
            return recipe.replacingOccurrences(of: slow, with: "(1 + 2 * r / 255) / 30")
        }

        /// `  file-12  [██████░░░░]  60%    0.4s` (attempt and the latest line of output optional).
        static var runningLine: Regex<(Substring, Substring, Substring, Substring?, Substring?, Substring?)> { #/^  file-(\d+) +\[([█░]{10})\] +(\d+%)? +\d+\.\ds( +attempt \d+)?(  downloaded .*)?$/# }
        /// `⠹ downloads  2.3s · 10 running · 60 waiting · 30/100 done`
        static var header: Regex<(Substring, Substring)> { #/^. downloads  \d+\.\ds · (\d+) running/# }
        static var finishedLine: Regex<(Substring, Substring)> { #/^✓ file-(\d+)  \d+\.\d+s$/# }

        @Test func theLiveViewShowsRunningTasksFinishedOnesTheJoinAndTheSummaryAt60Columns() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: try Self.fastDownloads())
            let pane = try TmuxPane(columns: 60, rows: 30, directory: sandbox.path,
                                    command: [try FlowrunBinary.path(), workflow, "--output", "tty", "--log-dir", sandbox.logDirectory])
            defer { pane.kill() }

            var mostRunning = 0
            var sawProgressBar = false
            var sawFinishedAboveRunning = false
            var sawCursorHidden = false
            var captures = 0
            // The header's `N/TOTAL`: the range's 100 members are known from the start (issue 31).
            var totals = Set<Int>()
            let ended = try pane.poll(until: .seconds(60)) { screen in
                captures += 1
                Self.expectNothingGarbled(screen, columns: 60)
                let lines = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                let running = lines.filter { $0.wholeMatch(of: Self.runningLine) != nil }
                if let headerIndex = lines.firstIndex(where: { $0.prefixMatch(of: Self.header) != nil }) {
                    let count = Int(lines[headerIndex].prefixMatch(of: Self.header)!.1)!
                    if let done = lines[headerIndex].firstMatch(of: #/(\d+)/(\d+)(?: done)?$/#) { totals.insert(Int(done.2)!) }
                    #expect(count <= 10, "more running than the group allows:\n\(screen)")
                    mostRunning = max(mostRunning, running.count)
                    if running.contains(where: { $0.wholeMatch(of: Self.runningLine)?.3 != nil }) { sawProgressBar = true }
                    if lines[..<headerIndex].contains(where: { $0.wholeMatch(of: Self.finishedLine) != nil }), !running.isEmpty {
                        sawFinishedAboveRunning = true
                    }
                    if try pane.cursorVisible() == false { sawCursorHidden = true }
                    // The region is below everything printed once: nothing after it but its own lines.
                    for line in lines[(headerIndex + 1)...] where !line.isEmpty {
                        #expect(line.hasPrefix("  "), "a line below the live region's header that is not part of it:\n\(screen)")
                    }
                }
                #expect(running.count <= 10, "more than the group limit shown running:\n\(screen)")
                return screen.contains("flowrun exited:")
            }
            let lastScreen = try pane.capture()
            try #require(ended, "flowrun did not finish within 60 s:\n\(lastScreen)")

            #expect(captures > 5, "the run ended before the live view could be watched")
            #expect(totals == [101], "the header's total was not the run's 101 tasks throughout: \(totals.sorted())")
            #expect(mostRunning >= 5 && mostRunning <= 10, "most running tasks seen at once: \(mostRunning)")
            #expect(sawProgressBar, "no running task ever showed a progress bar with a percentage")
            #expect(sawFinishedAboveRunning, "finished tasks never appeared above the running ones")
            #expect(sawCursorHidden, "the cursor was never hidden while the view was live")
            #expect(try pane.cursorVisible(), "the cursor was not given back at the end")

            // The whole scroll-back: every line printed once, the region gone.
            let history = try pane.capture(history: true)
            Self.expectNothingGarbled(history, columns: 60)
            let lines = history.split(separator: "\n").map(String.init)
            let finished = lines.compactMap { $0.wholeMatch(of: Self.finishedLine).map { Int($0.1)! } }
            #expect(finished.sorted() == Array(1...100), "each download finished once above the region:\n\(history)")
            #expect(!lines.contains { $0.prefixMatch(of: Self.header) != nil }, "a live region was left in the scroll-back:\n\(history)")
            #expect(!lines.contains { $0.wholeMatch(of: Self.runningLine) != nil }, "a running line was left in the scroll-back:\n\(history)")

            let group = try #require(lines.firstIndex { $0.hasPrefix("▣ group downloads succeeded (100/100 succeeded") }, "\(history)")
            let join = try #require(lines.firstIndex { $0.hasPrefix("◆ join all-downloaded succeeded: 1/1 succeeded (1 needed)") }, "\(history)")
            // Member by member, one row each: the first twenty, then a count of the rest and the record's file.
            let first = try #require(lines[join...].firstIndex { $0.hasPrefix("    ✓ file-1  ") }, "\(history)")
            #expect(first - join <= 2, "the head takes at most two rows at 60 columns:\n\(history)")
            #expect(lines[first].contains("  file=file-1.bin  bytes="), "\(history)")
            #expect(lines[first + 19].hasPrefix("    ✓ file-20  "), "\(history)")
            #expect(lines[first + 20] == "    … and 80 more: 80 succeeded", "\(history)")
            #expect(lines[first + 21].hasPrefix("    see: ") && lines[first + 21].hasSuffix("/joins/all-downloaded.json"), "\(history)")
            let report = try #require(lines.firstIndex { $0.hasPrefix("✓ report  ") }, "\(history)")
            let lastDownload = try #require(lines.lastIndex { $0.wholeMatch(of: Self.finishedLine) != nil })
            #expect(lastDownload < group && group < join && join < report, "order: downloads, group, join block, report\n\(history)")

            let summary = try #require(lines.firstIndex { $0.hasPrefix("✓ downloads succeeded in ") && $0.hasSuffix("(exit 0)") }, "\(history)")
            #expect(summary > report)
            #expect(lines[summary + 1] == "  101 succeeded", "\(history)")
            #expect(lines[summary + 2].hasPrefix("  slowest: file-"), "\(history)")
            // The record's path, shortened in the middle if it does not fit 60 columns.
            let runFolder = try #require(runFolders(in: sandbox.logDirectory).first)
            #expect(lines[summary + 3].hasPrefix("  record: /") && lines[summary + 3].hasSuffix("/" + runFolder), "\(history)")
            #expect(lines.last == "flowrun exited: 0", "\(history)")
        }

        /// Narrowing the window mid-run: the next frames fit the new width
        /// and the old region is replaced, not left behind in pieces.
        @Test func aResizedWindowIsDrawnAtItsNewWidth() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                name: resize
                max_parallel: 4
                groups:
                  work:
                    foreach: {range: [1, 16]}
                    task:
                      name: a-task-with-a-longish-name-${{ item }}
                      run: "for p in 20 40 60 80 100; do sleep 0.15; echo ::progress::$p; done"
                """)
            let pane = try TmuxPane(columns: 80, rows: 24, directory: sandbox.path,
                                    command: [try FlowrunBinary.path(), workflow, "--output", "tty", "--log-dir", sandbox.logDirectory])
            defer { pane.kill() }
            let wide = try pane.poll(until: .seconds(30)) { $0.contains("4 running") }
            let wideScreen = try pane.capture()
            try #require(wide, "the live view never showed 4 running tasks:\n\(wideScreen)")
            try pane.resize(columns: 40)
            // Rows as displayed (`-J` would join rows tmux re-wrapped at the
            // resize, even after they were redrawn): above the region only
            // finished tasks, from its header down only its own lines.
            var narrowFrames = 0
            let ended = try pane.poll(until: .seconds(30), joined: false) { screen in
                let rows = screen.split(separator: "\n").map(String.init)
                let headers = rows.indices.filter { rows[$0].hasPrefix("resize  ", after: 2) }
                #expect(headers.count <= 1, "a region was drawn twice:\n\(screen)")
                if let header = headers.first, try pane.width() == 40 {
                    narrowFrames += 1
                    for row in rows[..<header] {
                        #expect(row.hasPrefix("✓ a-task-with-a-longish-name-"), "a leftover of an earlier frame:\n\(screen)")
                    }
                    for row in rows[(header + 1)...] {
                        #expect(row.hasPrefix("  a-task-with-a-l…  ") || row.hasPrefix("  ◌ "), "not a line of the region:\n\(screen)")
                        #expect(row.count <= 39, "\(screen)")
                    }
                }
                return screen.contains("flowrun exited:")
            }
            let endScreen = try pane.capture()
            try #require(ended, "flowrun did not finish:\n\(endScreen)")
            #expect(narrowFrames > 0)
            let history = try pane.capture(history: true, joined: false)
            let summary = try #require(history.range(of: "✓ resize succeeded in"), "\(history)")
            Self.expectNothingGarbled(String(history[summary.lowerBound...]), columns: 40)
            #expect(history.contains("flowrun exited: 0"), "\(history)")
        }

        /// `--output tty` not to a terminal: the view's lasting lines, no escapes, no colour.
        @Test func toAFileTheTTYViewWritesItsLinesWithoutAnyEscape() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                name: to-a-file
                tasks:
                  fetch: {run: "echo ::progress::50; echo done"}
                  check:
                    needs: fetch
                    run: |
                      printf 'FAIL: \\033[31mred\\033[0m\\n' >&2; exit 3
                """, output: "tty", environment: ["NO_COLOR": "", "TERM": "xterm-256color"])
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            #expect(!run.stdout.contains("\u{1B}"), "\(run)")
            let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.contains { $0.wholeMatch(of: #/✓ fetch  \d+\.\d+s/#) != nil }, "\(run)")
            #expect(lines.contains { $0.wholeMatch(of: #/✗ check  failed \(exit 3, \d+\.\d+s\)/#) != nil }, "\(run)")
            #expect(lines.contains("    │ FAIL: red"), "the log tail, its colours taken out\n\(run)")
            #expect(lines.contains { $0.hasPrefix("    log: ") && $0.hasSuffix("-check.log") && $0.contains("/logs/") }, "\(run)")
            #expect(lines.contains { $0.hasPrefix("✗ to-a-file failed in ") && $0.hasSuffix("(exit 1)") }, "\(run)")
            #expect(lines.contains("  1 succeeded · 1 failed"), "\(run)")
        }

        /// Every line fits the width (nothing wrapped: `capture-pane -J`
        /// joins wrapped rows) and no escape sequence leaked as text.
        static func expectNothingGarbled(_ screen: String, columns: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            for trimmed in screen.split(separator: "\n") {
                #expect(trimmed.count <= columns, "a line wider than \(columns) columns: '\(trimmed)'\n\(screen)", sourceLocation: sourceLocation)
                #expect(!trimmed.contains("\u{1B}"), "an escape character in the captured text:\n\(screen)", sourceLocation: sourceLocation)
                #expect(trimmed.firstMatch(of: #/\[\??\d*(;\d+)*[A-HJKlhm]/#) == nil || trimmed.contains("[█") || trimmed.contains("[░"),
                        "what looks like a broken escape sequence: '\(trimmed)'\n\(screen)", sourceLocation: sourceLocation)
            }
        }
    }
}

/// A detached tmux session on a private server (`tmux -L NAME`, no config
/// file) running one command in a pane of a fixed size; `kill()` stops the
/// server and everything in it.
final class TmuxPane {
    let socket = "flowrun-e2e-\(getpid())-\(UUID().uuidString.prefix(8))"
    private let scratch: TemporaryDirectory
    private var killed = false

    /// Starts `command` in `directory`; when it ends the pane shows
    /// `flowrun exited: STATUS` and stays open until `kill()`.
    init(columns: Int, rows: Int, directory: String, command: [String]) throws {
        scratch = try TemporaryDirectory(prefix: "flowrun-tmux")
        let quoted = command.map(Self.shellQuoted).joined(separator: " ")
        let script = "cd \(Self.shellQuoted(directory)) && \(quoted); echo \"flowrun exited: $?\"; exec sleep 600"
        _ = try tmux(["new-session", "-d", "-s", "live", "-x", String(columns), "-y", String(rows),
                      "env", "TERM=xterm-256color", "NO_COLOR=", "sh", "-c", script])
    }

    deinit { kill() }

    /// The pane's text, wrapped rows joined (`-J`, which also keeps the
    /// blanks a cleared row ends in: they are trimmed here); with `history`,
    /// the scroll-back too.
    func capture(history: Bool = false, joined: Bool = true) throws -> String {
        let text = try tmux(["capture-pane", "-p", "-t", "live"] + (joined ? ["-J"] : []) + (history ? ["-S", "-"] : []))
        return text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.replacing(#/ +$/#, with: "") }
            .joined(separator: "\n")
    }

    func cursorVisible() throws -> Bool {
        try tmux(["display-message", "-p", "-t", "live", "#{cursor_flag}"]).trimmingCharacters(in: .whitespacesAndNewlines) == "1"
    }

    func width() throws -> Int {
        Int(try tmux(["display-message", "-p", "-t", "live", "#{pane_width}"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// Types `keys` into the pane, as tmux names them (`C-z`, `Enter`, or text).
    func send(keys: [String]) throws {
        _ = try tmux(["send-keys", "-t", "live"] + keys)
    }

    func resize(columns: Int) throws {
        _ = try tmux(["resize-window", "-t", "live", "-x", String(columns)])
    }

    /// Captures the pane every 50 ms until `condition` holds (true) or
    /// `timeout` passes (false).
    func poll(until timeout: Duration, joined: Bool = true, _ condition: (String) throws -> Bool) throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try condition(try capture(joined: joined)) { return true }
            usleep(50_000)
        }
        return false
    }

    func kill() {
        guard !killed else { return }
        killed = true
        let socketPath = (try? tmux(["display-message", "-p", "#{socket_path}"]))?.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try? tmux(["kill-server"])
        // The server leaves its socket file behind.
        if let socketPath, socketPath.hasSuffix("/" + socket) { unlink(socketPath) }
    }

    @discardableResult
    private func tmux(_ arguments: [String]) throws -> String {
        let executable = try Self.executable()
        let stdoutPath = scratch.path + "/stdout"
        let stderrPath = scratch.path + "/stderr"
        var environment = ProcessInfo.processInfo.environment
        environment["TERM"] = environment["TERM"] ?? "xterm-256color"
        environment.removeValue(forKey: "TMUX")
        let outcome = try ChildProcess.run(
            executable: executable, arguments: ["-L", socket, "-f", "/dev/null"] + arguments,
            environment: environment.map { "\($0.key)=\($0.value)" },
            stdoutPath: stdoutPath, stderrPath: stderrPath, timeout: .seconds(10), launcher: nil)
        let output = FileManager.default.contents(atPath: stdoutPath).map { String(decoding: $0, as: UTF8.self) } ?? ""
        guard outcome.exitStatus == 0 || arguments == ["kill-server"] else {
            let error = FileManager.default.contents(atPath: stderrPath).map { String(decoding: $0, as: UTF8.self) } ?? ""
            throw FlowrunBinaryError("tmux \(arguments.joined(separator: " ")) failed: \(error)")
        }
        return output
    }

    /// tmux from PATH (`.ci/run` installs it).
    static func executable() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/tmux") {
            return "\(directory)/tmux"
        }
        throw FlowrunBinaryError("tmux is not installed (apt-get install tmux); the live view test needs a real terminal")
    }

    static func shellQuoted(_ word: String) -> String {
        "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
