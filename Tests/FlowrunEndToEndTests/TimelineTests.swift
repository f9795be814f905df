import Foundation
import Testing

extension RunEndToEnd {
    /// `--trace` and `--timeline` on real run records (issue 19.6), through the
    /// `flowrun show RUN`, which carries the options.
    @Suite struct TimelineTests {
        /// Retries, a semaphore wait, a group, a join, needs on a task, a
        /// group and a join, a skipped task and an allowed failure.
        static let workflow = """
            name: timeline
            max_parallel: 4
            semaphores: {db: 1}
            tasks:
              prepare: {run: "sleep 0.1"}
              holder: {run: "sleep 0.3", semaphores: [db]}
              waiter: {run: "true", needs: prepare, semaphores: [db]}
              flaky:
                run: 'if [ "$FLOWRUN_ATTEMPT" = 1 ]; then exit 3; fi; echo second'
                retries: 1
                retry_delay: 100ms
              broken: {run: "exit 2", continue_on_error: true}
              never: {run: "true", needs: broken}
              after-group: {run: "true", needs: fetch}
              after-join: {run: "true", needs: both}
            groups:
              fetch:
                needs: [prepare]
                foreach: [a, b, c]
                task: {run: "echo ${{ item }}"}
            joins:
              both: {wait: [waiter, flaky]}
            """

        struct Trace {
            var events: [[String: Any]]
            var other: [String: Any]

            init(_ path: String) throws {
                let data = try #require(FileManager.default.contents(atPath: path), "no trace at \(path)")
                let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "the trace is not a JSON object")
                events = try #require(object["traceEvents"] as? [[String: Any]], "no traceEvents")
                other = object["otherData"] as? [String: Any] ?? [:]
            }

            func phase(_ phase: String, category: String? = nil) -> [[String: Any]] {
                events.filter { $0["ph"] as? String == phase && (category == nil || $0["cat"] as? String == category) }
            }

            /// A task's attempt slices, by attempt.
            func slices(of task: String) -> [[String: Any]] {
                phase("X", category: "task").filter { $0["name"] as? String == task }
                    .sorted { integer(($0["args"] as? [String: Any])?["attempt"]) ?? 0 < integer(($1["args"] as? [String: Any])?["attempt"]) ?? 0 }
            }
        }

        /// Runs `text`, then draws its record; returns the record and both files' paths.
        static func drawn(_ text: String, in sandbox: RunSandbox, expectExit: Int32? = nil) throws -> (RunRecordFiles, trace: String, svg: String) {
            let run = try sandbox.run(text, timeout: .seconds(60))
            run.expectNoCrash()
            if let expectExit { #expect(run.exitStatus == expectExit, "\(run)") }
            let record = try sandbox.record()
            let trace = sandbox.file("run.trace.json"), svg = sandbox.file("run.svg")
            let drawn = try FlowrunBinary.run(Self.show(record.directory) + ["--trace", trace, "--timeline", svg], timeout: .seconds(60))
            drawn.expectNoCrash()
            #expect(drawn.exitStatus == 0 && drawn.stderr.isEmpty, "\(drawn)")
            return (record, trace, svg)
        }

        @Test func theTraceHasOneSlicePerAttemptWithItsArgsAndAnArrowPerNeed() throws {
            let sandbox = try RunSandbox()
            let (record, tracePath, _) = try Self.drawn(Self.workflow, in: sandbox, expectExit: 0)
            let trace = try Trace(tracePath)
            #expect(trace.other["finished"] as? Bool == true)

            for task in record.tasks {
                let name = try #require(task["name"] as? String)
                let status = task["status"] as? String
                let slices = trace.slices(of: name)
                guard status != "skipped" else {
                    #expect(slices.isEmpty, "\(name) did not run but has slices")
                    #expect(trace.phase("i", category: "not_run").contains { ($0["args"] as? [String: Any])?["task"] as? String == name },
                            "no not-run instant for \(name)")
                    continue
                }
                let attempts = integer(task["attempts"]) ?? 0
                #expect(slices.count == attempts, "\(name): \(slices.count) slices for \(attempts) attempts")
                let args = slices.map { $0["args"] as? [String: Any] ?? [:] }
                #expect(args.map { integer($0["attempt"]) ?? 0 } == Array(1...max(1, attempts)), "\(name): \(args)")
                #expect(args.last?["status"] as? String == status, "\(name): \(args)")
                #expect(integer(args.last?["exit_code"]) == integer(task["exit_code"]), "\(name): \(args)")
            }
            let flaky = trace.slices(of: "flaky").map { $0["args"] as? [String: Any] ?? [:] }
            #expect(flaky.first?["status"] as? String == "failed" && integer(flaky.first?["exit_code"]) == 3, "\(flaky)")
            #expect(trace.phase("X", category: "retry_delay").contains { ($0["args"] as? [String: Any])?["task"] as? String == "flaky" })

            // The semaphore wait is a slice naming what it waited on.
            let waits = trace.phase("X", category: "slots").filter { ($0["args"] as? [String: Any])?["task"] as? String == "waiter" }
            #expect(waits.count == 1, "\(trace.phase("X", category: "slots"))")
            let waitingOn = (waits.first?["args"] as? [String: Any])?["waiting_on"] as? [String] ?? []
            #expect(waitingOn.contains { $0.contains("db") }, "\(waitingOn)")

            // Completions as instants.
            let instants = trace.phase("i").compactMap { ($0["name"] as? String) }
            #expect(instants.contains("group fetch succeeded") && instants.contains("join both succeeded"), "\(instants)")

            // One slot track never holds two slices at once.
            let slots = Dictionary(grouping: trace.phase("X", category: "task")) { integer($0["tid"]) ?? -1 }
            for (thread, slices) in slots {
                let spans = slices.map { (double($0["ts"]) ?? 0, (double($0["ts"]) ?? 0) + (double($0["dur"]) ?? 0)) }.sorted { $0.0 < $1.0 }
                for (earlier, later) in zip(spans, spans.dropFirst()) {
                    #expect(earlier.1 <= later.0 + 0.001, "slices overlap on thread \(thread): \(earlier) and \(later)")
                }
            }
            #expect(slots.count <= 4, "more slot tracks than max_parallel: \(slots.keys.sorted())")

            // An arrow per need: from inside the need's slice (or its completion) to the dependent's start.
            let starts = Dictionary(trace.phase("s").map { (integer($0["id"]) ?? -1, $0) }, uniquingKeysWith: { first, _ in first })
            var arrows: [String: Set<String>] = [:]
            for finish in trace.phase("f") {
                let start = try #require(starts[integer(finish["id"]) ?? -2], "a flow end without its start")
                let dependent = trace.phase("X", category: "task").first {
                    integer($0["tid"]) == integer(finish["tid"]) && double($0["ts"]) == double(finish["ts"])
                }
                let dependentName = try #require(dependent?["name"] as? String, "a flow ends where no slice starts: \(finish)")
                let time = double(start["ts"]) ?? -1
                let source = trace.events.first { event in
                    guard integer(event["tid"]) == integer(start["tid"]) else { return false }
                    if event["ph"] as? String == "i" { return double(event["ts"]) == time }
                    guard event["ph"] as? String == "X", event["cat"] as? String == "task", let ts = double(event["ts"]) else { return false }
                    return ts <= time && time <= ts + (double(event["dur"]) ?? 0)
                }
                let sourceName = try #require(source.map { ($0["args"] as? [String: Any])?["group"] as? String ?? ($0["args"] as? [String: Any])?["join"] as? String ?? $0["name"] as? String ?? "" })
                arrows[dependentName, default: []].insert(sourceName)
            }
            #expect(arrows["waiter"] == ["prepare"], "\(arrows)")
            #expect(arrows["after-group"] == ["fetch"], "\(arrows)")
            #expect(arrows["after-join"] == ["both"], "\(arrows)")
            // The group's need is said once, by its first member to start (docs/events-json.md): one arrow into the fan-out.
            let members = ["a", "b", "c"].indices.map { "fetch[\($0)]" }
            #expect(members.filter { arrows[$0] == ["prepare"] }.count == 1, "one member's arrow comes from its group's need: \(arrows)")
            #expect(members.allSatisfy { arrows[$0] == nil || arrows[$0] == ["prepare"] }, "\(arrows)")
        }

        /// Parses the SVG with python3's XML parser; prints each `data-task`
        /// rect's task and attempt, one a line.
        static let svgScript = """
            import sys, xml.etree.ElementTree as ET
            root = ET.parse(sys.argv[1]).getroot()
            assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
            for rect in root.iter("{http://www.w3.org/2000/svg}rect"):
                if rect.get("data-task") is not None:
                    print("%s\\t%s\\t%s" % (rect.get("data-task"), rect.get("data-attempt"), rect.get("y")))
            """

        static func svgRects(_ path: String) throws -> [(task: String, attempt: Int, y: String)] {
            let result = try PythonScript.run(Self.svgScript, arguments: [path], modules: ["xml.etree.ElementTree"])
            #expect(result.exitStatus == 0, "the SVG is not well-formed XML: \(result.stderr)")
            return result.stdout.split(separator: "\n").map { line in
                let parts = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                return (parts[0], Int(parts[1]) ?? -1, parts.count > 2 ? parts[2] : "")
            }
        }

        @Test func theSVGIsWellFormedAndShowsEveryTaskOncePerAttempt() throws {
            let sandbox = try RunSandbox()
            let (record, _, svgPath) = try Self.drawn(Self.workflow, in: sandbox, expectExit: 0)
            let rects = try Self.svgRects(svgPath)
            for task in record.tasks {
                let name = try #require(task["name"] as? String)
                let attempts = rects.filter { $0.task == name }.map(\.attempt).sorted()
                if task["status"] as? String == "skipped" {
                    #expect(attempts == [0], "\(name) did not run: one marker, attempt 0; found \(attempts)")
                } else {
                    #expect(attempts == Array(1...(integer(task["attempts"]) ?? 1)), "\(name): \(attempts)")
                }
            }
            #expect(Set(rects.map(\.task)) == Set(record.tasks.compactMap { $0["name"] as? String }))
            let text = try String(contentsOfFile: svgPath, encoding: .utf8)
            #expect(!text.contains("<script") && !text.contains("href="), "the SVG must be self-contained")
        }

        /// A name full of XML's special characters comes out escaped, and a
        /// live run (no run_finished yet) draws what is running so far.
        @Test func aLiveRunDrawsWhatIsRunningAndNamesAreEscaped() throws {
            let sandbox = try RunSandbox()
            let live = try sandbox.start("""
                groups:
                  odd:
                    foreach: ["a&b<c>\\"'"]
                    task: {run: "true", name: "m-${{ item }}"}
                tasks:
                  wait-for-go: {run: 'echo started > "$SANDBOX/started"; while [ ! -e "$SANDBOX/go" ]; do sleep 0.02; done', needs: [odd]}
                """)
            defer {
                _ = FileManager.default.createFile(atPath: sandbox.file("go"), contents: Data())
                _ = live.finish()
            }
            #expect(sandbox.waitFor("started"), "the task never started")
            // Its start is written once it ran a moment (the member's is in its task_finished line).
            #expect(sandbox.waitForEvent("task_started"), "wait-for-go's start was never written")
            let runs = try FileManager.default.contentsOfDirectory(atPath: sandbox.logDirectory)
            let folder = sandbox.logDirectory + "/" + (try #require(runs.first))
            let trace = sandbox.file("live.json"), svg = sandbox.file("live.svg")
            let drawn = try FlowrunBinary.run(Self.show(folder) + ["--trace", trace, "--timeline", svg])
            #expect(drawn.exitStatus == 0, "\(drawn)")
            let parsed = try Trace(trace)
            #expect(parsed.other["finished"] as? Bool == false)
            let running = parsed.slices(of: "wait-for-go").first?["args"] as? [String: Any]
            #expect(running?["status"] as? String == "running", "\(parsed.slices(of: "wait-for-go"))")
            let rects = try Self.svgRects(svg)
            #expect(Set(rects.map(\.task)) == ["m-a&b<c>\"'", "wait-for-go"], "\(rects)")
        }

        /// 1,000 tasks behind 16 slots: 16 packed rows, every task a bar, a
        /// file of bounded size, drawn quickly.
        @Test func aThousandTaskRunRendersInPackedLanes() throws {
            let sandbox = try RunSandbox()
            let (record, tracePath, svgPath) = try Self.drawn("""
                max_parallel: 16
                groups:
                  many:
                    foreach: {range: [1, 1000]}
                    task: {sleep: 10ms..30ms}
                """, in: sandbox, expectExit: 0)
            #expect(record.tasks.count == 1000)
            let rects = try Self.svgRects(svgPath)
            #expect(rects.count == 1000, "\(rects.count) bars")
            #expect(Set(rects.map(\.task)).count == 1000)
            let rows = Set(rects.map(\.y))
            #expect(rows.count <= 16 && rows.count >= 8, "\(rows.count) rows for 16 slots")
            let size = try FileManager.default.attributesOfItem(atPath: svgPath)[.size] as? Int ?? 0
            #expect(size < 1_000_000, "the SVG is \(size) bytes")
            #expect(try Trace(tracePath).phase("X", category: "task").count == 1000)
        }

        /// A task cancelled while it waits to retry ran once: one slice with
        /// its failed attempt, no "did not run" marker.
        @Test func aTaskCancelledInItsRetryDelayShowsTheAttemptItHad() throws {
            let sandbox = try RunSandbox()
            let (record, tracePath, svgPath) = try Self.drawn("""
                fail_fast: true
                tasks:
                  flaky: {run: "exit 4", retries: 3, retry_delay: 30s}
                  breaks-later: {run: "sleep 0.5; exit 1"}
                """, in: sandbox, expectExit: 1)
            #expect(record.status("flaky") == "cancelled", "\(record.tasks)")
            let trace = try Trace(tracePath)
            let slices = trace.slices(of: "flaky").map { $0["args"] as? [String: Any] ?? [:] }
            #expect(slices.count == 1 && slices.first?["status"] as? String == "failed" && integer(slices.first?["exit_code"]) == 4, "\(slices)")
            #expect(trace.phase("i", category: "not_run").isEmpty, "\(trace.phase("i"))")
            #expect(try Self.svgRects(svgPath).filter { $0.task == "flaky" }.map(\.attempt) == [1])
        }

        @Test func aRecordFolderWithoutRunsIsAnError() throws {
            let scratch = try TemporaryDirectory(prefix: "flowrun-timeline")
            let run = try FlowrunBinary.run(["show", "--log-dir", scratch.path, "--trace", scratch.path + "/t.json"])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(!FileManager.default.fileExists(atPath: scratch.path + "/t.json"), "\(run)")
        }

        /// `flowrun show RUN --log-dir DIR` for a run folder `DIR/RUN`.
        static func show(_ folder: String) -> [String] {
            let url = URL(fileURLWithPath: folder)
            return ["show", url.lastPathComponent, "--log-dir", url.deletingLastPathComponent().path]
        }
    }
}
