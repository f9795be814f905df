import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEnd {
    /// Issue 17: join blocks member by member, failures with their last
    /// lines, a live view that survives a resize, in a real terminal (tmux)
    /// and in plain and JSON output (SPEC §5, §7).
    @Suite struct JoinReportTests {
        /// Nine fan-out members, each printing its own value and an output key.
        static let nineMembers = """
            name: nine
            groups:
              fetch:
                foreach: [alpha, bravo, charlie, delta, echo, foxtrot, golf, hotel, india]
                task:
                  run: 'echo "size=${#ITEM}" >> "$FLOWRUN_OUTPUT"; echo "value-$ITEM"'
                  env: {ITEM: "${{ item }}"}
            joins:
              all:
                wait: [fetch]
            """
        static let items = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]

        /// The block's lines in `lines`: its head (found by `head`) and the indented lines after it.
        static func block(in lines: [String], head: (String) -> Bool) -> [String]? {
            guard let start = lines.firstIndex(where: head) else { return nil }
            let rest = lines[(start + 1)...].prefix { $0.hasPrefix("    ") }
            return [lines[start]] + rest
        }

        @Test func aJoinOverANineMemberFanOutShowsEveryMembersValueInATerminal() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.nineMembers)
            let pane = try TmuxPane(columns: 80, rows: 30, directory: sandbox.path,
                                    command: [try FlowrunBinary.path(), workflow, "--output", "tty", "--log-dir", sandbox.logDirectory])
            defer { pane.kill() }
            let ended = try pane.poll(until: .seconds(30)) { $0.contains("flowrun exited:") }
            let history = try pane.capture(history: true)
            try #require(ended, "flowrun did not finish:\n\(history)")
            let lines = history.split(separator: "\n").map(String.init)
            let block = try #require(Self.block(in: lines) { $0.hasPrefix("◆ join all succeeded: 1/1 succeeded") }, "\(history)")
            for (index, item) in Self.items.enumerated() {
                let row = block.first { $0.hasPrefix("    ✓ fetch[\(index)] (\(item))  ") }
                #expect(row?.hasSuffix("size=\(item.count)  stdout: value-\(item)") == true, "member \(index): \(row ?? "none")\n\(history)")
            }
            #expect(!block.contains { $0.contains("results") || $0.contains("{\"") }, "no JSON blob:\n\(history)")
            #expect(history.contains("flowrun exited: 0"), "\(history)")
        }

        @Test func aJoinOverAThousandMembersStaysUnderThirtyLines() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                name: thousand
                max_parallel: 8
                groups:
                  many:
                    foreach: {range: [1, 1000]}
                    task: {sleep: 0s}
                joins:
                  all:
                    wait: [many]
                """)
            let pane = try TmuxPane(columns: 80, rows: 30, directory: sandbox.path,
                                    command: [try FlowrunBinary.path(), workflow, "--output", "tty", "--log-dir", sandbox.logDirectory])
            defer { pane.kill() }
            let ended = try pane.poll(until: .seconds(120)) { $0.contains("flowrun exited:") }
            let history = try pane.capture(history: true)
            try #require(ended, "flowrun did not finish:\n\(history.suffix(3000))")
            let lines = history.split(separator: "\n").map(String.init)
            let block = try #require(Self.block(in: lines) { $0.hasPrefix("◆ join all succeeded: 1/1 succeeded") }, "\(history.suffix(3000))")
            #expect(block.count < 30, "\(block.joined(separator: "\n"))")
            #expect(block.count > 20, "the first members are shown:\n\(block.joined(separator: "\n"))")
            #expect(block[1].hasPrefix("    ✓ many[0] (1)  "), "\(block.joined(separator: "\n"))")
            #expect(block.contains("    … and 980 more: 980 succeeded"), "\(block.joined(separator: "\n"))")
            let record = try sandbox.record()
            let see = try #require(block.last, "no see: line")
            #expect(see == "    see: " + PathShape.shortened(record.directory + "/joins/all.json", to: 70), "\(see)")
            let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: record.directory + "/joins/all.json"))) as? [String: Any]
            #expect((report?["results"] as? [Any])?.count == 1000, "the record holds every member")
        }

        /// Long names, progress and output lines; four running at a time.
        static let resizeWorkflow = """
            name: resize
            max_parallel: 4
            groups:
              work:
                foreach: {range: [1, 24]}
                task:
                  name: job-${{ item }}-with-a-longish-name
                  run: "for p in 20 40 60 80 100; do sleep 0.2; echo ::progress::$p; echo step $p of the work; done"
            """

        /// Rows as displayed (not joined) while the region is live: blank, a
        /// finished task, the header, a running row, a waiting row; never two
        /// rows run together or a piece of an earlier frame.
        static func malformedRows(_ screen: String) -> [String] {
            let finished = #/^✓ job-\d+-with-a-longish-name  \d+\.\d+s$/#
            let header = #/^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] resize  \d+\.\ds · \d+ run(ning)?/#
            let running = #/^  job-\d+-with-a-[a-z-]*…? +(\[[█░]+\] +)?(\d+%)? +\d+\.\ds(  step \d+ of the work)?…?$/#
            let runningCut = #/^  job-\d+-with-a-[a-z-]*…? +(\[[█░]+\] +)?(\d+%)? +\d+\.\ds  [a-z0-9 ]*…$/#
            let waiting = #/^  ◌ \d+ waiting for max_parallel: /#
            let more = #/^  … and \d+ more/#
            return screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { row in
                row.isEmpty || row.wholeMatch(of: finished) != nil || row.prefixMatch(of: header) != nil
                    || row.wholeMatch(of: running) != nil || row.wholeMatch(of: runningCut) != nil
                    || row.prefixMatch(of: waiting) != nil || row.prefixMatch(of: more) != nil
                    ? false : true
            }
        }

        @Test func aPaneResizedFrom100To50ColumnsAndBackHoldsNoStaleFragments() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.resizeWorkflow)
            let pane = try TmuxPane(columns: 100, rows: 30, directory: sandbox.path,
                                    command: [try FlowrunBinary.path(), workflow, "--output", "tty", "--log-dir", sandbox.logDirectory])
            defer { pane.kill() }
            // Ready: four running, at least one finished above them.
            let ready = try pane.poll(until: .seconds(30)) { $0.contains("4 running") && $0.contains("✓ job-") }
            let readyScreen = try pane.capture()
            try #require(ready, "the live view never showed 4 running and one finished:\n\(readyScreen)")
            var checked: [Int: Int] = [:]
            for columns in [50, 100] {
                try pane.resize(columns: columns)
                // Watch a second of frames at this width (the tasks keep finishing and starting).
                let deadline = ContinuousClock.now + .seconds(1.5)
                while ContinuousClock.now < deadline {
                    let screen = try pane.capture(joined: false)
                    if screen.contains("succeeded in") || screen.contains("flowrun exited") { break }
                    guard try pane.width() == columns, screen.contains(" resize  ") else { continue }
                    checked[columns, default: 0] += 1
                    let bad = Self.malformedRows(screen)
                    #expect(bad.isEmpty, "at \(columns) columns, rows that are no part of the view: \(bad)\n\(screen)")
                    for row in screen.split(separator: "\n") {
                        #expect(row.count < columns, "a row as wide as the pane (\(columns)): \(row)")
                    }
                    usleep(50_000)
                }
            }
            #expect((checked[50] ?? 0) > 3 && (checked[100] ?? 0) > 3, "frames checked per width: \(checked)")
            let ended = try pane.poll(until: .seconds(60)) { $0.contains("flowrun exited:") }
            let endScreen = try pane.capture()
            try #require(ended, "flowrun did not finish:\n\(endScreen)")
            #expect(endScreen.contains("flowrun exited: 0"), "\(endScreen)")
        }

        /// At 50 columns: a failure's reason wraps (read whole), its last
        /// lines are in the summary with its log, an allowed failure is not
        /// counted as a failure, a member the join did not need says so.
        @Test func atFiftyColumnsAFailuresReasonIsReadableAndTheSummaryShowsItsLastLines() throws {
            let sandbox = try RunSandbox()
            // Port 9 (discard) refuses: the reason is libcurl's, longer than the pane is wide.
            let url = "http://127.0.0.1:9/a/rather/long/path/to/the/thing.tar.gz"
            let workflow = try sandbox.write(workflow: """
                name: narrow
                tasks:
                  fetch:
                    http: {url: "\(url)"}
                  build:
                    run: 'echo compiling main.c; echo "error: main.c:3: undefined symbol foo" >&2; echo giving up >&2; exit 3'
                  lint:
                    continue_on_error: true
                    run: 'echo style warnings >&2; exit 1'
                  quick: {run: 'echo fast'}
                  slow: {run: 'sleep 20'}
                joins:
                  first:
                    wait: [quick, slow]
                    need: any
                """)
            let pane = try TmuxPane(columns: 50, rows: 40, directory: sandbox.path,
                                    command: [try FlowrunBinary.path(), workflow, "--output", "tty", "--log-dir", sandbox.logDirectory])
            defer { pane.kill() }
            let ended = try pane.poll(until: .seconds(30)) { $0.contains("flowrun exited:") }
            let history = try pane.capture(history: true, joined: false)
            try #require(ended, "flowrun did not finish:\n\(history)")
            let rows = history.split(separator: "\n").map(String.init)
            for row in rows { #expect(row.count < 50, "a row as wide as the pane: \(row)") }

            // The reason, wrapped over rows that continue with an indent.
            let failed = try #require(rows.firstIndex { $0.hasPrefix("✗ fetch  failed") }, "\(history)")
            let continued = rows[(failed + 1)...].prefix { $0.hasPrefix("    ") && !$0.hasPrefix("    │") && !$0.hasPrefix("    log:") }
            let reason = ([rows[failed]] + continued.map { String($0.dropFirst(4)) }).joined().filter { $0 != " " }
            #expect(reason.contains("(requestfailed:Couldn'tconnecttoserver,"), "the reason read whole:\n\(history)")

            let summary = try #require(rows.firstIndex { $0.hasPrefix("✗ narrow failed in ") }, "\(history)")
            let after = Array(rows[summary...])
            // The counts, wrapped at 50 columns.
            let counts = after.dropFirst().prefix { !$0.hasPrefix("  slowest") && !$0.hasPrefix("  failed") }.joined(separator: " ")
            #expect(counts.filter { $0 != " " } == "1succeeded·1failed(allowed)·2failed·1notneeded", "\(after.joined(separator: "\n"))")
            let build = try #require(after.firstIndex { $0.hasPrefix("  failed: build — ") }, "\(after.joined(separator: "\n"))")
            // Shortened to 50 columns: `/tmp/…/000/000001-build.log` (the log's shard of `logs/`).
            #expect(after[build].hasSuffix("/000/000001-build.log"), "\(after[build])")
            #expect(Array(after[(build + 1)...].prefix(3)) == ["    │ compiling main.c", "    │ error: main.c:3: undefined symbol foo", "    │ giving up"],
                    "\(after.joined(separator: "\n"))")
            #expect(after.contains { $0.hasPrefix("  failed (allowed): lint") }, "\(after.joined(separator: "\n"))")
            #expect(after.contains("  not needed: slow"), "\(after.joined(separator: "\n"))")
            #expect(rows.contains { $0.hasPrefix("⊘ slow  not needed (join `first` had what it") }, "\(history)")
            #expect(!history.contains("join_settled"), "an internal reason code reached the screen:\n\(history)")
            #expect(history.contains("flowrun exited: 1"), "\(history)")
        }

        @Test func plainAndJSONCarryTheSameJoinContentAndJSONMatchesTheSchema() throws {
            let plainSandbox = try RunSandbox()
            let plain = try plainSandbox.run(Self.nineMembers, output: "plain")
            plain.expectNoCrash()
            #expect(plain.exitStatus == 0, "\(plain)")
            let jsonSandbox = try RunSandbox()
            let json = try jsonSandbox.run(Self.nineMembers, output: "json")
            json.expectNoCrash()
            #expect(json.exitStatus == 0, "\(json)")

            let lines = plain.stdout.split(separator: "\n").map(String.init)
            let block = try #require(Self.block(in: lines) { $0.contains(" join     all succeeded") }, "\(plain)")
            // name → (outcome, values) as plain shows them.
            var plainMembers: [String] = []
            for row in block.dropFirst() {
                let match = try #require(row.wholeMatch(of: #/    ✓ (fetch\[\d\]) \((\w+)\)  \d+\.\d+s  size=(\d+)  stdout: (.*)/#), "\(row)")
                plainMembers.append("\(match.1) \(match.2) succeeded size=\(match.3) stdout=\(match.4)")
            }
            let event = try #require(json.stdout.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            }.first { $0["event"] as? String == "join_completed" }, "\(json)")
            let results = try #require(event["results"] as? [[String: Any]], "\(event)")
            let jsonMembers = results.map { member -> String in
                let values = (member["values"] as? [[String: Any]] ?? []).map { "\($0["key"] ?? "")=\($0["value"] ?? "")" }
                return "\(member["name"] ?? "") \(member["item"] ?? "") \(member["outcome"] ?? "") " + values.joined(separator: " ")
            }
            #expect(plainMembers.count == 9)
            #expect(plainMembers == jsonMembers.map { $0.replacingOccurrences(of: "\n", with: "") }, "plain: \(plainMembers)\njson: \(jsonMembers)")
            #expect(event["report_path"] as? String == (try jsonSandbox.record()).directory + "/joins/all.json")

            let problems = try RunEndToEndParallel.EventsSchemaTests.validate(json.stdout.split(separator: "\n").map(String.init))
            #expect(problems.isEmpty, "\(problems)")
        }

        /// Without `--stream`, a running task's row ends with its latest line
        /// (stdout or stderr); the line is not printed above the region.
        @Test func aRunningTasksRowShowsItsLatestLine() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                name: latest
                tasks:
                  talker:
                    run: 'echo first line; echo "warming the cache" >&2; while [ ! -e "$SANDBOX/go" ]; do sleep 0.05; done'
                """)
            let pane = try TmuxPane(columns: 80, rows: 20, directory: sandbox.path,
                                    command: ["env", "SANDBOX=" + sandbox.path, try FlowrunBinary.path(), workflow, "--output", "tty", "--log-dir", sandbox.logDirectory])
            defer { pane.kill() }
            let shown = try pane.poll(until: .seconds(20)) { screen in
                screen.split(separator: "\n").contains { $0.hasPrefix("  talker  ") && $0.hasSuffix("  warming the cache") }
            }
            let screen = try pane.capture()
            _ = try sandbox.directory.write("", to: "go")
            try #require(shown, "the row never showed the task's latest line:\n\(screen)")
            #expect(!screen.contains("talker | ") && !screen.contains("talker ! "), "printed above without --stream:\n\(screen)")
            let ended = try pane.poll(until: .seconds(20)) { $0.contains("flowrun exited:") }
            let history = try pane.capture(history: true)
            try #require(ended, "flowrun did not finish:\n\(history)")
            #expect(history.contains("flowrun exited: 0"), "\(history)")
            #expect(!history.contains("warming the cache"), "the live row's line stays in the region:\n\(history)")
        }

        @Test func streamShowsStderrMarkedAndJSONEmitsTaskOutputEvents() throws {
            let text = """
                tasks:
                  talk: {run: 'echo to-stdout; echo to-stderr >&2'}
                """
            let plain = try RunSandbox().run(text, ["--stream"], output: "plain")
            #expect(plain.stdout.contains("talk | to-stdout\n") && plain.stdout.contains("talk ! to-stderr\n"), "\(plain)")
            let sandbox = try RunSandbox()
            let json = try sandbox.run(text, ["--stream"], output: "json")
            let lines = json.stdout.split(separator: "\n").map(String.init)
            let outputs = lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
                .filter { $0["event"] as? String == "task_output" }
                .map { "\($0["task"] ?? "") \($0["stream"] ?? "") \($0["line"] ?? "")" }
            #expect(outputs.sorted() == ["talk stderr to-stderr", "talk stdout to-stdout"], "\(json)")
            let problems = try RunEndToEndParallel.EventsSchemaTests.validate(lines)
            #expect(problems.isEmpty, "\(problems)")
            let record = try sandbox.record()
            #expect(!record.events.contains { $0?["event"] as? String == "task_output" }, "task_output is console only")
        }
    }
}

/// What `PathText.shortened` does, for expectations (the test target cannot see FlowrunReporting's internals).
enum PathShape {
    static func shortened(_ path: String, to columns: Int) -> String {
        guard path.count > columns else { return path }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var tail: [String] = []
        var used = 0
        let absolute = path.hasPrefix("/") && parts.count > 3
        let head = absolute ? "/" + parts[1] : parts[0]
        for part in parts.dropFirst(absolute ? 2 : 1).reversed() {
            if head.count + 2 + used + part.count + 1 > columns { break }
            tail.insert(part, at: 0)
            used += part.count + 1
        }
        return head + "/…/" + tail.joined(separator: "/")
    }
}
