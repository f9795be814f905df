import Testing
import FlowrunEvents
import FlowrunRecord

/// The event JSON is a contract (docs/events-json.md): `RunEvent` became a
/// payload per kind, and every kind must encode to the bytes the struct of
/// optionals it replaced wrote. The expected lines are that encoder's
/// output, captured from the release before (cb6be7d) on the same events.
@Suite struct RunEventJSONTests {
    private static let tempLog = "/tmp/rec/logs/000/000001-build.log"
    private static let inRecord = "/tmp/rec/".utf8.count

    /// One or more events of every kind, each with every field its kind carries.
    static let events: [RunEvent] = {
        let log = RunEvent.LogPath(path: tempLog, offsetInRecord: inRecord)
        var events: [RunEvent] = [
            RunEvent(elapsed: 0, timestamp: 1_764_400_000.25, .runStarted(.init(
                runID: "20261129-044500-abcd", workflow: "demo \"q\"", path: "/tmp/rec/.flowrun/runs/20261129-044500-abcd",
                maxParallel: 4, members: 12, timeoutSeconds: 600, resumedFrom: "20261128-000000-beef", sizedAtRunTime: ["fan"]))),
            RunEvent(elapsed: 0, timestamp: 1_764_400_000.999, .runStarted(.init(runID: "r", workflow: "w", path: "/p", maxParallel: 1, members: 0))),
            RunEvent(elapsed: 0.5, timestamp: 1, .taskWaiting(.init(task: "build", waitingOn: ["max_parallel 4/4"]))),
            RunEvent(elapsed: 0.5, timestamp: 1, .taskWaiting(.init(task: "build", waitingOn: ["db 1/1 (held by migrate)", "max_parallel 4/4"]))),
            RunEvent(elapsed: 1.25, timestamp: 2, .taskStarted(.init(
                task: "build", attempt: 1, timeoutSeconds: 30, groupTimeoutSeconds: 60, limits: #"{"run":2}"#, needs: ["a", "b"], log: log))),
            RunEvent(elapsed: 2, timestamp: 2, .taskStarted(.init(
                task: "build", attempt: 2, log: .init(path: "/tmp/rec/logs/000/000001-b\"x.log", offsetInRecord: inRecord)))),
            RunEvent(elapsed: 2, timestamp: 2, .taskStarted(.init(task: "nap", attempt: 1))),
            RunEvent(elapsed: 3, timestamp: 3, .taskProgress(.init(task: "build", percent: 42))),
            RunEvent(elapsed: 3.5, timestamp: 3, .taskOutput(.init(task: "build", stream: .stderr, line: "warning: \u{1}x"))),
            RunEvent(elapsed: 4, timestamp: 4, .taskRetrying(.init(task: "flaky", status: .failed, reason: "exit 3", exitCode: 3, attempt: 2, delay: 1.5))),
            RunEvent(elapsed: 4, timestamp: 4, .taskRetrying(.init(
                task: "flaky", status: .timedOut, reason: "timed out after 1s", signal: 15, attempt: 3, delay: 0))),
            RunEvent(elapsed: 5, timestamp: 5, .taskFinished(.init(task: "build", status: .succeeded, attempt: 1, exitCode: 0, duration: 3.75, log: log))),
            RunEvent(elapsed: 5, timestamp: 5, .taskFinished(.init(
                task: "build", status: .failed, attempt: 2, exitCode: 1, signal: 9, duration: 1, reason: "killed", log: log,
                logTail: ["one", "two"], allowed: true))),
            RunEvent(elapsed: 5, timestamp: 5, .taskFinished(.init(
                task: "member[1]", status: .cancelled, attempt: 1, duration: 0.5, reason: "join_settled", cancelledBy: "quorum"))),
            RunEvent(elapsed: 5, timestamp: 5, .taskFinished(.init(task: "cached", status: .succeeded, attempt: 0, reused: .upToDate))),
            RunEvent(elapsed: 5, timestamp: 5, .taskFinished(.init(task: "skipme", status: .skipped, attempt: 0, reason: "a need failed"))),
        ]
        // A start and its end as one line (the run record's merge).
        let start = RunEvent(elapsed: 6, timestamp: 6, .taskStarted(.init(
            task: "quick", attempt: 1, timeoutSeconds: 5, groupTimeoutSeconds: 9, limits: "{}", needs: ["x"])))
        var end = RunEvent.TaskFinished(task: "quick", status: .succeeded, attempt: 1, exitCode: 0, duration: 0.001)
        guard case .taskStarted(let started) = start.payload else { fatalError("a start") }
        end.start = RunEvent.MergedStart(elapsed: start.elapsed, started)
        events.append(RunEvent(elapsed: 6.001, timestamp: 6, .taskFinished(end)))
        events += [
            RunEvent(elapsed: 7, timestamp: 7, .groupFinished(.init(group: "fan", status: .failed, members: 10, succeeded: 9, duration: 2.5, reason: "foreach: bad"))),
            RunEvent(elapsed: 8, timestamp: 8, .joinCompleted(.init(
                join: "quorum", status: .succeeded, members: 3, succeeded: 2, required: 2, timedOut: false, duration: 1.25, missing: [],
                report: [(key: "a.stdout", value: "hello"), (key: "b.x", value: "\"y\"")],
                joinReport: JoinReport(
                    name: "quorum", status: .succeeded, timedOut: false, counted: 3, succeeded: 2, required: 2, duration: 1.25, missing: [],
                    members: [
                        .init(name: "a", outcome: .succeeded, duration: 0.5, values: [.init(key: "stdout", text: "hello", isStdout: true)], log: "logs/a.log"),
                        .init(name: "b", group: "g", item: "it", outcome: .notNeeded, values: []),
                    ],
                    path: "joins/quorum.json")))),
            RunEvent(elapsed: 8, timestamp: 8, .joinCompleted(.init(
                join: "late", status: .failed, members: 2, succeeded: 0, required: 2, timedOut: true, duration: 3, missing: ["m1", "m2"]))),
            RunEvent(elapsed: 9, timestamp: 9, .runFinished(.init(
                runID: "20261129-044500-abcd", duration: 9, counts: [(.succeeded, 5), (.failed, 1)], exitCode: 1, path: "/tmp/rec"))),
            // Kinds added since (issue 36), at the end so the indices above stay: a service ready.
            RunEvent(elapsed: 3.25, timestamp: 3, .taskReady(.init(task: "db", after: 0.75, probe: "tcp 127.0.0.1:5432"))),
            // New with the Slurm executor (no "before"): its line as docs/events-json.md gives it.
            RunEvent(elapsed: 9.5, timestamp: 9, .taskSlurm(.init(task: "align[3]", jobID: "1234_3", state: "RUNNING", node: "n1", text: "running on n1"))),
        ]
        return events
    }()

    /// What the encoder of cb6be7d wrote for `events`, line by line.
    static let linesBefore: [String] = [
        #"{"event":"run_started","time":"2025-11-29T07:06:40.250Z","elapsed":0,"run_id":"20261129-044500-abcd","workflow":"demo \"q\"","timeout_seconds":600,"max_parallel":4,"path":"/tmp/rec/.flowrun/runs/20261129-044500-abcd","members":12,"resumed_from":"20261128-000000-beef","sized_at_run_time":["fan"]}"#,
        #"{"event":"run_started","time":"2025-11-29T07:06:40.999Z","elapsed":0,"run_id":"r","workflow":"w","max_parallel":1,"path":"/p","members":0}"#,
        #"{"event":"task_waiting","elapsed":0.5,"task":"build"}"#,
        #"{"event":"task_waiting","elapsed":0.5,"task":"build","waiting_on":["db 1/1 (held by migrate)","max_parallel 4/4"]}"#,
        #"{"event":"task_started","elapsed":1.25,"task":"build","timeout_seconds":30,"group_timeout_seconds":60,"limits":{"run":2},"needs":["a","b"],"path":"logs/000/000001-build.log"}"#,
        #"{"event":"task_started","elapsed":2,"task":"build","attempt":2,"path":"logs/000/000001-b\"x.log"}"#,
        #"{"event":"task_started","elapsed":2,"task":"nap"}"#,
        #"{"event":"task_progress","elapsed":3,"task":"build","progress":42}"#,
        #"{"event":"task_output","elapsed":3.5,"task":"build","stream":"stderr","line":"warning: \u0001x"}"#,
        #"{"event":"task_retrying","elapsed":4,"task":"flaky","status":"failed","attempt":2,"exit_code":3,"reason":"exit 3","delay":1.5}"#,
        #"{"event":"task_retrying","elapsed":4,"task":"flaky","status":"timed_out","attempt":3,"signal":15,"reason":"timed out after 1s","delay":0}"#,
        #"{"event":"task_finished","elapsed":5,"task":"build","path":"logs/000/000001-build.log"}"#,
        #"{"event":"task_finished","elapsed":5,"task":"build","status":"failed","attempt":2,"exit_code":1,"signal":9,"duration":1,"reason":"killed","path":"logs/000/000001-build.log","log_tail":["one","two"],"allowed":true}"#,
        #"{"event":"task_finished","elapsed":5,"task":"member[1]","status":"cancelled","reason":"join_settled","cancelled_by":"quorum"}"#,
        #"{"event":"task_finished","elapsed":5,"task":"cached","attempt":0,"reused":"up_to_date"}"#,
        #"{"event":"task_finished","elapsed":5,"task":"skipme","status":"skipped","attempt":0,"reason":"a need failed"}"#,
        #"{"event":"task_finished","elapsed":6.001,"task":"quick","started":6,"timeout_seconds":5,"group_timeout_seconds":9,"limits":{},"needs":["x"]}"#,
        #"{"event":"group_finished","elapsed":7,"group":"fan","status":"failed","duration":2.5,"reason":"foreach: bad","members":10,"succeeded":9}"#,
        #"{"event":"join_completed","elapsed":8,"join":"quorum","status":"succeeded","duration":1.25,"members":3,"succeeded":2,"required":2,"timed_out":false,"missing":[],"report":[{"name":"a.stdout","value":"hello"},{"name":"b.x","value":"\"y\""}],"results":[{"name":"a","outcome":"succeeded","duration":0.5,"log":"logs/a.log","values":[{"key":"stdout","value":"hello"}]},{"name":"b","group":"g","item":"it","outcome":"not_needed","values":[]}],"report_path":"joins/quorum.json"}"#,
        #"{"event":"join_completed","elapsed":8,"join":"late","status":"failed","duration":3,"members":2,"succeeded":0,"required":2,"timed_out":true,"missing":["m1","m2"],"report":[]}"#,
        #"{"event":"run_finished","elapsed":9,"run_id":"20261129-044500-abcd","duration":9,"path":"/tmp/rec","counts":{"succeeded":5,"failed":1},"exit_code":1}"#,
        #"{"event":"task_ready","elapsed":3.25,"task":"db","after":0.75,"probe":"tcp 127.0.0.1:5432"}"#,
        #"{"event":"task_slurm","elapsed":9.5,"task":"align[3]","slurm_job":"1234_3","state":"RUNNING","node":"n1"}"#,
    ]

    @Test func everyKindEncodesToTheBytesTheEncoderBeforeWrote() {
        #expect(Set(Self.events.map(\.kind)) == Set(RunEvent.Kind.allCases), "every kind is covered")
        #expect(Self.events.count == Self.linesBefore.count)
        for (event, before) in zip(Self.events, Self.linesBefore) {
            #expect(Array(event.jsonLine.utf8) == Array(before.utf8), "\(event.kind)")
        }
    }

    @Test func theRecordsMergeOfAStartIntoItsEndCarriesTheStartsFields() throws {
        let start = RunEvent(elapsed: 6, timestamp: 6, .taskStarted(.init(
            task: "quick", attempt: 1, timeoutSeconds: 5, groupTimeoutSeconds: 9, limits: "{}", needs: ["x"])))
        let end = RunEvent(elapsed: 6.001, timestamp: 6, .taskFinished(.init(task: "quick", status: .succeeded, attempt: 1, exitCode: 0, duration: 0.001)))
        let merged = start.mergedInto(end)
        #expect(merged.jsonLine == Self.linesBefore[16])
        #expect(merged.kind == .taskFinished && merged.subject == "quick")
    }
}
