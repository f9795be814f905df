import Foundation
import Testing

extension RunEndToEnd {
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
        /// keeps the semaphore for 300 ms; `max_parallel` is never the limit.
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
              sleeper: {sleep: 5s}
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
            #expect(jsonLines == jsonRecord, "--output json prints exactly the lines of events.jsonl")
            let jsonEvents = try jsonLines.map(Self.kindAndSubject(json:))
            #expect(Set(jsonEvents.map(\.kind)) == Self.allKinds, "the workflow should exercise every kind of event")

            let plainSandbox = try RunSandbox()
            let plainRun = try plainSandbox.run(Self.workflow, output: "plain")
            plainRun.expectNoCrash()
            #expect(plainRun.exitStatus == 0, "\(plainRun)")
            let plainEvents = try plainRun.stdout.split(separator: "\n").compactMap { try Self.kindAndSubject(plain: String($0)) }
            let plainRecord = try Self.eventsFile(in: plainSandbox).map(Self.kindAndSubject(json:))
            // The same run: plain lines and events.jsonl are one stream, in one order.
            #expect(plainEvents.map(\.description) == plainRecord.map(\.description), "\(plainRun)")

            // Two runs: the same events; each task's, group's and join's own in the same order.
            #expect(plainEvents.count == jsonEvents.count, "plain \(plainEvents.count) events, json \(jsonEvents.count)")
            #expect(plainEvents.map(\.description).sorted() == jsonEvents.map(\.description).sorted())
            #expect(Self.perSubject(plainEvents) == Self.perSubject(jsonEvents))
            #expect(plainEvents.first?.kind == "run_started" && jsonEvents.first?.kind == "run_started")
            #expect(plainEvents.last?.kind == "run_finished" && jsonEvents.last?.kind == "run_finished")
            for (kind, subject) in [("task_waiting", "waiter"), ("task_retrying", "flaky"), ("task_progress", "progress"),
                                    ("join_completed", "patience"), ("group_finished", "pair")] {
                #expect(jsonEvents.contains(KindAndSubject(kind: kind, subject: subject)), "no \(kind) for \(subject)")
            }

            let problems = try Self.validate(jsonLines + (try Self.eventsFile(in: plainSandbox)))
            #expect(problems.isEmpty, "\(problems)")
        }

        /// A schema that accepted anything would pass the test above: it must
        /// reject a key it does not know, a wrong type and a missing key.
        @Test func theSchemaRejectsWhatTheEngineNeverWrites() throws {
            let problems = try Self.validate([
                #"{"event":"task_started","time":"2026-11-22T14:03:07.250Z","elapsed":0.1,"task":"a","attempt":1,"colour":"red"}"#,
                #"{"event":"task_progress","time":"2026-11-22T14:03:07.250Z","elapsed":0.1,"task":"a","progress":"50"}"#,
                #"{"event":"run_finished","time":"2026-11-22T14:03:07.250Z","elapsed":0.1,"run_id":"20261122-140307-4f1c09a2b7d3e865","duration":1}"#,
                #"{"event":"task_started","time":"2026-11-22T14:03:07.250Z","elapsed":0.1,"task":"a","attempt":1}"#,
            ])
            #expect(problems.map(\.line) == [1, 2, 3], "\(problems)")
        }

        /// `task_started`'s applied deadlines and `limits` (issue 21): the
        /// shapes the engine writes pass, anything else is refused.
        @Test func theSchemaChecksTheAppliedLimitsOfTaskStarted() throws {
            let start = #"{"event":"task_started","time":"2026-11-22T14:03:07.250Z","elapsed":0.1,"task":"a","attempt":1,"#
            let problems = try Self.validate([
                start + #""timeout_seconds":300,"limits":{"run":4}}"#,
                start + #""group_timeout_seconds":60,"limits":{"run":4,"group":{"name":"g","concurrency":2},"semaphores":[{"name":"db","weight":2,"capacity":3}]}}"#,
                start + #""limits":{"group":{"name":"g","concurrency":2}}}"#,
                start + #""limits":{"run":4,"semaphores":[{"name":"db","weight":2}]}}"#,
                start + #""limits":{"run":4,"queue":1}}"#,
                start + #""timeout_seconds":"5s"}"#,
                #"{"event":"run_started","time":"2026-11-22T14:03:07.250Z","elapsed":0,"run_id":"20261122-140307-4f1c09a2b7d3e865","workflow":"w","path":"p","members":1,"timeout_seconds":60}"#,
            ])
            #expect(problems.map(\.line) == [3, 4, 5, 6], "\(problems)")
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
