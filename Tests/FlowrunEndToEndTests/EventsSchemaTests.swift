import Foundation
import Testing

extension RunEndToEndParallel {
    /// `--output json` and `--output plain` carry the same events, and every
    /// JSON event validates against `docs/events-schema.json` (issue 5).
    @Suite struct EventsSchemaTests {
        static let schemaPath: String = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // FlowrunEndToEndTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // the package
            .appendingPathComponent("docs/events-schema.json").path

        /// Every kind of event, each on a path that does not depend on timing:
        /// `waiter` becomes ready only after `starter` ran, while `holder`
        /// keeps the semaphore for 300 ms; `max_parallel` is never the limit;
        /// `sleeper` outlasts `patience`'s 200 ms five times (its timers run
        /// in deadline order however loaded the machine is).
        static let workflow = """
            name: every-event
            max_parallel: 16
            semaphores: {one: 1}
            tasks:
              holder: {run: "sleep 0.3", semaphores: [one]}
              starter: {run: "true"}
              waiter: {run: "true", needs: starter, semaphores: [one]}
              progress: {run: "echo ::progress::40; sleep 0.05; echo ::progress::100; sleep 0.05; echo half"}
              flaky:
                run: 'if [ "$FLOWRUN_ATTEMPT" = 1 ]; then echo first try >&2; exit 3; fi; echo second'
                retries: 1
                retry_delay: 100ms
              broken: {run: "echo oops >&2; exit 2", continue_on_error: true}
              unneeded: {run: "true", needs: progress, if: "${{ tasks.progress.stdout == 'nope' }}"}
              sleeper: {sleep: 1s}
            groups:
              pair:
                foreach: [a, b]
                task: {run: "echo ${{ item }}"}
            joins:
              both:
                wait: [pair, flaky]
                need: all
                report: [flaky.stdout, pair.results]
              patience:
                wait: [sleeper]
                timeout: 200ms
                on_timeout: continue
            """

        static let allKinds: Set<String> = [
            "run_started", "task_waiting", "task_started", "task_progress", "task_retrying",
            "task_finished", "group_finished", "join_completed", "run_finished",
        ]

        @Test func plainAndJSONCarryTheSameEventsAndEveryJSONLineMatchesTheSchema() throws {
            let jsonSandbox = try RunSandbox()
            let jsonRun = try jsonSandbox.run(Self.workflow, output: "json")
            jsonRun.expectNoCrash()
            #expect(jsonRun.exitStatus == 0, "\(jsonRun)")
            let jsonRecord = try Self.eventsFile(in: jsonSandbox)
            let jsonLines = jsonRun.stdout.split(separator: "\n").map(String.init)
            // events.jsonl is --output json with short attempts in one line.
            let problem = try Self.difference(console: jsonLines, file: jsonRecord)
            #expect(problem == nil, "events.jsonl is --output json, each short attempt in one line: \(problem ?? "")")
            #expect(jsonRecord.count < jsonLines.count, "no attempt was written as one line")
            let jsonEvents = try jsonLines.map(Self.kindAndSubject(json:))
            #expect(Set(jsonEvents.map(\.kind)) == Self.allKinds, "the workflow should exercise every kind of event")

            let plainSandbox = try RunSandbox()
            let plainRun = try plainSandbox.run(Self.workflow, output: "plain")
            plainRun.expectNoCrash()
            #expect(plainRun.exitStatus == 0, "\(plainRun)")
            let plainEvents = try plainRun.stdout.split(separator: "\n").compactMap { try Self.kindAndSubject(plain: String($0)) }
            let plainRecord = try Self.unfolded(Self.eventsFile(in: plainSandbox)).map(Self.kindAndSubject(json:))
            // The same run: plain lines and events.jsonl are one stream (a start held back a moment aside).
            #expect(Self.perSubject(plainEvents) == Self.perSubject(plainRecord), "\(plainRun)")
            #expect(plainEvents.map(\.description).sorted() == plainRecord.map(\.description).sorted(), "\(plainRun)")

            // Two runs: the same events; each task's, group's and join's own in the same order. Progress
            // lines read in one chunk are one `task_progress` (the latest), so how many a run reports
            // depends on how the reads fell: compared with repeats folded, the rest one for one.
            let plainOnce = Self.foldingRepeatedProgress(plainEvents), jsonOnce = Self.foldingRepeatedProgress(jsonEvents)
            #expect(plainOnce.count == jsonOnce.count, "plain \(plainEvents.count) events, json \(jsonEvents.count)")
            #expect(plainOnce.map(\.description).sorted() == jsonOnce.map(\.description).sorted())
            #expect(Self.perSubject(plainOnce) == Self.perSubject(jsonOnce))
            #expect(plainEvents.first?.kind == "run_started" && jsonEvents.first?.kind == "run_started")
            #expect(plainEvents.last?.kind == "run_finished" && jsonEvents.last?.kind == "run_finished")
            for (kind, subject) in [("task_waiting", "waiter"), ("task_retrying", "flaky"), ("task_progress", "progress"),
                                    ("join_completed", "patience"), ("group_finished", "pair")] {
                #expect(jsonEvents.contains(KindAndSubject(kind: kind, subject: subject)), "no \(kind) for \(subject)")
            }

            let problems = try Self.validate(jsonLines + (try Self.eventsFile(in: plainSandbox)))
            #expect(problems.isEmpty, "\(problems)")
        }

        /// A fan-out member that ran a moment costs one short line in
        /// events.jsonl (issue 20: a million members in a record of 120 MB):
        /// its `task_finished`, carrying `started`, with nothing a reader can
        /// derive; and every reader still gets what it needs from it.
        @Test func aShortFanOutMemberCostsOneShortLine() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                name: short
                max_parallel: 4
                tasks:
                  list: {run: seq 2000}
                groups:
                  work:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task: {sleep: 0s}
                """, timeout: .seconds(120))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let lines = try Self.eventsFile(in: sandbox)
            let events = try Self.parsed(lines)
            let start = try #require(events.first)
            #expect(start["event"] as? String == "run_started" && start["time"] != nil && start["max_parallel"] as? Int == 4, "\(start)")
            // The member lines: waits aside (a full max_parallel; issue 20's lazy fan-out has none).
            let memberLines = zip(lines, events).filter { ($0.1["task"] as? String)?.hasPrefix("work[") == true && $0.1["event"] as? String != "task_waiting" }
            let finished = memberLines.filter { $0.1["event"] as? String == "task_finished" }
            #expect(finished.count == 2000)
            #expect(finished.allSatisfy { $0.1["started"] != nil } || memberLines.count > 2000, "a member's end with no start")
            let bytes = memberLines.reduce(0) { $0 + $1.0.utf8.count + 1 }
            #expect(bytes <= 2000 * 90, "\(bytes / 2000) bytes a member: \(memberLines.prefix(3).map(\.0))")
            for (line, event) in finished {
                // The group's first member to start names the group's needs too.
                #expect(line.utf8.count <= (event["needs"] == nil ? 90 : 110), "a member's line over 90 bytes: \(line)")
                #expect(event["time"] == nil && event["status"] == nil && event["attempt"] == nil && event["exit_code"] == nil
                        && event["duration"] == nil && event["limits"] == nil, "\(line)")
                guard let started = event["started"] as? Double, let elapsed = event["elapsed"] as? Double else { continue }
                #expect(started <= elapsed, "\(line)")
            }
            let problems = try Self.validate(lines)
            #expect(problems.isEmpty, "\(problems.prefix(5))")

            // show reads the record as a reader of events.jsonl would: every member succeeded, once.
            let record = try sandbox.record()
            #expect(record.names("task_started").filter { $0.hasPrefix("work[") }.count == 2000, "\(record.overview)")
            #expect(Set(record.names("task_finished").filter { $0.hasPrefix("work[") }).count == 2000)
        }

        /// A schema that accepted anything would pass the test above: it must
        /// reject a key it does not know, a wrong type and a missing key.
        @Test func theSchemaRejectsWhatTheEngineNeverWrites() throws {
            let problems = try Self.validate([
                #"{"event":"task_started","elapsed":0.1,"task":"a","colour":"red"}"#,
                #"{"event":"task_progress","elapsed":0.1,"task":"a","progress":"50"}"#,
                #"{"event":"run_finished","time":"2026-11-22T14:03:07.250Z","elapsed":0.1,"run_id":"20261122-140307-4f1c09a2b7d3e865","duration":1}"#,
                #"{"event":"task_started","elapsed":0.1,"task":"a"}"#,
                // What goes without saying is not said: a success's status, a first attempt's number, a time past run_started.
                #"{"event":"task_finished","elapsed":0.2,"task":"a","status":"succeeded"}"#,
                #"{"event":"task_finished","elapsed":0.2,"task":"a","attempt":1}"#,
                #"{"event":"task_finished","time":"2026-11-22T14:03:07.250Z","elapsed":0.2,"task":"a"}"#,
                #"{"event":"task_finished","elapsed":0.2,"task":"a","started":0.1,"needs":["b"],"limits":{"run":2,"group":{"name":"g","concurrency":1}}}"#,
            ])
            #expect(problems.map(\.line) == [1, 2, 3, 5, 6, 7], "\(problems)")
        }

        /// A run id to the microsecond (what flowrun writes) and one from
        /// before microseconds (records users keep) pass; nothing else does.
        @Test func theSchemaTakesRunIdsOfBothShapes() throws {
            let line = { (id: String) in
                #"{"event":"run_started","time":"2026-11-22T14:03:07.250Z","elapsed":0,"run_id":""# + id + #"","workflow":"w","max_parallel":4,"path":"p","members":1}"#
            }
            let problems = try Self.validate([
                line("20261122-140307.482915-4f1c09a2b7d3"), line("20261122-140307-4f1c09a2b7d3e865"),
                line("20261122-140307.482915-4f1c09a2b7d3e865"), line("20261122-140307-4f1c09a2b7d3"), line("20261122-140307.48291-4f1c09a2b7d3"),
            ])
            #expect(problems.map(\.line) == [3, 4, 5], "\(problems)")
        }

        /// `task_started`'s applied deadlines and `limits` (issue 21): the
        /// shapes the engine writes pass, anything else is refused.
        @Test func theSchemaChecksTheAppliedLimitsOfTaskStarted() throws {
            let start = #"{"event":"task_started","elapsed":0.1,"task":"a","attempt":2,"#
            let problems = try Self.validate([
                start + #""timeout_seconds":300,"limits":{"run":4}}"#,
                start + #""group_timeout_seconds":60,"limits":{"run":4,"group":{"name":"g","concurrency":2},"semaphores":[{"name":"db","weight":2,"capacity":3}]}}"#,
                start + #""limits":{"group":{"name":"g","concurrency":2}}}"#,
                start + #""limits":{"run":4,"semaphores":[{"name":"db","weight":2}]}}"#,
                start + #""limits":{"run":4,"queue":1}}"#,
                start + #""timeout_seconds":"5s"}"#,
                #"{"event":"run_started","time":"2026-11-22T14:03:07.250Z","elapsed":0,"run_id":"20261122-140307-4f1c09a2b7d3e865","workflow":"w","max_parallel":4,"path":"p","members":1,"timeout_seconds":60}"#,
            ])
            #expect(problems.map(\.line) == [3, 4, 5, 6], "\(problems)")
        }

        /// The keys of a `task_started` that a `task_finished` with `started` carries for it.
        static let startKeys = ["timeout_seconds", "group_timeout_seconds", "limits", "needs"]

        /// Nil when `file` (events.jsonl) holds the events of `console`
        /// (`--output json`) with short attempts folded into one line each;
        /// else what differs.
        static func difference(console: [String], file: [String]) throws -> String? {
            let record = try parsed(file)
            let merged = Set(record.filter { $0["started"] != nil }.map { "\($0["task"] ?? "")@\($0["elapsed"] ?? "")" })
            let folded = try folded(console, merging: merged)
            let written = try record.map(canonical).sorted()
            guard folded != written else { return nil }
            return "only in --output json \(folded.filter { !written.contains($0) }), only in the file \(written.filter { !folded.contains($0) })"
        }

        /// An event as JSON text with its keys sorted, to compare.
        static func canonical(_ event: NSDictionary) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys]), as: UTF8.self)
        }

        static func parsed(_ lines: [String]) throws -> [NSDictionary] {
            try lines.map { line in try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? NSDictionary, "not a JSON object: \(line)") }
        }

        /// `--output json`'s lines as events.jsonl writes them, sorted: the
        /// `task_started` of each attempt in `merging` (`TASK@ELAPSED` of its
        /// end) folded into its `task_finished` (`started` and the start's
        /// keys), provided no other line about the task came between.
        static func folded(_ lines: [String], merging: Set<String>) throws -> [String] {
            var events = try parsed(lines).map { $0.mutableCopy() as! NSMutableDictionary }
            var openStart: [String: Int] = [:]
            var dropped = IndexSet()
            for (position, event) in events.enumerated() {
                guard let task = event["task"] as? String else { continue }
                let kind = event["event"] as? String
                if kind == "task_started" {
                    openStart[task] = position
                } else if let start = openStart.removeValue(forKey: task), kind == "task_finished",
                          merging.contains("\(task)@\(event["elapsed"] ?? "")") {
                    event["started"] = events[start]["elapsed"]
                    for key in startKeys { event[key] = events[start][key] }
                    dropped.insert(start)
                }
            }
            // Held starts are written late: compare as a set of lines, in each task's order.
            events = events.enumerated().filter { !dropped.contains($0.offset) }.map(\.element)
            return try events.map(canonical).sorted()
        }

        /// events.jsonl's lines with each short attempt's one line opened up
        /// into its `task_started` and `task_finished` (docs/events-json.md).
        static func unfolded(_ lines: [String]) throws -> [String] {
            try lines.flatMap { line -> [String] in
                let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                guard event["event"] as? String == "task_finished", let started = event["started"] else { return [line] }
                var start: [String: Any] = ["event": "task_started", "elapsed": started, "task": event["task"] ?? ""]
                for key in startKeys { start[key] = event[key] }
                let data = try JSONSerialization.data(withJSONObject: start)
                return [String(decoding: data, as: UTF8.self), line]
            }
        }

        struct KindAndSubject: Hashable, CustomStringConvertible {
            var kind: String
            var subject: String
            var description: String { "\(kind) \(subject)" }
        }

        static func eventsFile(in sandbox: RunSandbox) throws -> [String] {
            let runs = runFolders(in: sandbox.logDirectory)
            let run = try #require(runs.count == 1 ? runs.first : nil, "one run folder expected, found \(runs)")
            let text = try String(contentsOfFile: sandbox.logDirectory + "/" + run + "/events.jsonl", encoding: .utf8)
            return text.split(separator: "\n").map(String.init)
        }

        static func kindAndSubject(json line: String) throws -> KindAndSubject {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
            let kind = try #require(object["event"] as? String, "no event kind: \(line)")
            let subject = (object["task"] ?? object["group"] ?? object["join"]) as? String ?? ""
            return KindAndSubject(kind: kind, subject: subject)
        }

        /// `14:03:07.250 WORD SUBJECT …` → the event; nil for the lines that
        /// continue one (indented: log tail, join values, summary details).
        static func kindAndSubject(plain line: String) throws -> KindAndSubject? {
            guard !line.hasPrefix(" ") else { return nil }
            let words = line.split(separator: " ").map(String.init)
            try #require(words.count >= 3 && words[0].wholeMatch(of: #/\d\d:\d\d:\d\d\.\d\d\d/#) != nil, "not an event line: \(line)")
            let subject = words[2].hasSuffix(":") ? String(words[2].dropLast()) : words[2]
            switch words[1] {
            case "run": return KindAndSubject(kind: words[2] == "finished" ? "run_finished" : "run_started", subject: "")
            case "waiting": return KindAndSubject(kind: "task_waiting", subject: subject)
            case "start": return KindAndSubject(kind: "task_started", subject: subject)
            case "progress": return KindAndSubject(kind: "task_progress", subject: subject)
            case "retry": return KindAndSubject(kind: "task_retrying", subject: subject)
            case "ok", "FAILED", "failed", "TIMEOUT", "cancel", "skipped": return KindAndSubject(kind: "task_finished", subject: subject)
            case "group": return KindAndSubject(kind: "group_finished", subject: subject)
            case "join": return KindAndSubject(kind: "join_completed", subject: subject)
            default:
                Issue.record("an unknown kind of plain line: \(line)")
                return nil
            }
        }

        /// Each subject's events in order (runs interleave subjects differently).
        /// `events` with a `task_progress` that follows another of the same subject left out.
        static func foldingRepeatedProgress(_ events: [KindAndSubject]) -> [KindAndSubject] {
            var lastKind: [String: String] = [:]
            return events.filter { event in
                defer { lastKind[event.subject] = event.kind }
                return !(event.kind == "task_progress" && lastKind[event.subject] == "task_progress")
            }
        }

        static func perSubject(_ events: [KindAndSubject]) -> [String: [String]] {
            Dictionary(grouping: events, by: \.subject).mapValues { $0.map(\.kind) }
        }

        struct Problem: CustomStringConvertible {
            var line: Int
            var message: String
            var description: String { "line \(line): \(message)" }
        }

        /// Validates each JSON line against the schema with python3's
        /// `jsonschema` (Debian: python3-jsonschema), draft 2020-12, after
        /// checking the schema itself.
        static func validate(_ lines: [String]) throws -> [Problem] {
            let scratch = try TemporaryDirectory(prefix: "flowrun-schema")
            let linesPath = try scratch.write(lines.joined(separator: "\n") + "\n", to: "events.jsonl")
            let script = """
                import json, sys
                try:
                    import jsonschema
                except ImportError:
                    print("0\\tpython3 has no jsonschema module (apt-get install python3-jsonschema)")
                    sys.exit(3)
                schema = json.load(open(sys.argv[1]))
                jsonschema.Draft202012Validator.check_schema(schema)
                validator = jsonschema.Draft202012Validator(schema)
                for number, line in enumerate(open(sys.argv[2]), 1):
                    for error in validator.iter_errors(json.loads(line)):
                        print("%d\\t%s at %s" % (number, error.message, "/".join(map(str, error.absolute_path))))
                        break
                """
            let scriptPath = try scratch.write(script, to: "validate.py")
            let outPath = scratch.path + "/out"
            let errPath = scratch.path + "/err"
            let outcome = try ChildProcess.run(
                executable: "/usr/bin/env", arguments: ["python3", scriptPath, schemaPath, linesPath],
                environment: ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" },
                stdoutPath: outPath, stderrPath: errPath, timeout: .seconds(60), launcher: nil)
            let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
            let errors = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
            try #require(outcome.exitStatus == 0, "the schema check did not run: \(output)\(errors)")
            return output.split(separator: "\n").map { row in
                let fields = row.split(separator: "\t", maxSplits: 1)
                return Problem(line: Int(fields[0]) ?? 0, message: fields.count > 1 ? String(fields[1]) : "")
            }
        }
    }
}
