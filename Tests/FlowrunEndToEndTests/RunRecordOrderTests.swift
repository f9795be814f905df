import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// Run ids name their start to the microsecond (issue 37):
    /// `20261130-012345.678901-4f1c09a2b7d3`. Records of one second sort by
    /// name, so pruning them at a run's start opens none of them: a
    /// benchmark's loop keeps 50 records of one second, and each run read the
    /// first line of every one (150 system calls, ~5 % of a no-op run).
    @Suite struct RunRecordOrderTests {
        static let workflow = """
            tasks:
              a: { sources: [a.c], generates: [a.o], run: "cp a.c a.o" }
            """

        /// Four runs moved into one second (the rest of their ids kept, as
        /// a fast loop makes them), their first events' times made to run
        /// the other way: a no-op run with `--keep 2` keeps itself and the
        /// one that started last of them (by id), and opens no other run's
        /// `events.jsonl` (strace).
        @Test func runsOfOneSecondArePrunedByTheirIdsWithoutReadingTheirRecords() throws {
            let strace = try RunSandbox.tool("strace")
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.workflow)
            try "int a;\n".write(toFile: sandbox.file("a.c"), atomically: false, encoding: .utf8)
            // The first run builds, the others are no-op runs.
            var made: [String] = []
            for round in 1...4 {
                let run = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment, timeout: .seconds(60))
                #expect(run.exitStatus == 0, "round \(round): \(run)")
                made.append(try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.logDirectory + "/latest"))
            }
            for id in made { #expect(isMicrosecondRunID(id), "\(id)") }
            #expect(made == made.sorted() && Set(made).count == made.count, "ids not in the order their runs started: \(made)")
            #expect(runFolders(in: sandbox.logDirectory) == made)

            // Into one second; the first run's first event now says it started last.
            let second = "20261129-120000"
            let times = ["2026-11-29T12:00:00.900Z", "2026-11-29T12:00:00.700Z", "2026-11-29T12:00:00.500Z", "2026-11-29T12:00:00.300Z"]
            var moved: [String] = []
            for (id, time) in zip(made, times) {
                let name = second + id.dropFirst(15)
                #expect(rename(sandbox.logDirectory + "/" + id, sandbox.logDirectory + "/" + name) == 0)
                let events = sandbox.logDirectory + "/" + name + "/events.jsonl"
                let text = try String(contentsOfFile: events, encoding: .utf8)
                let start = try #require(text.range(of: #""time":""#), "\(text.prefix(80))")
                let end = text.index(start.upperBound, offsetBy: time.count)
                try (text[..<start.upperBound] + time + text[end...]).write(toFile: events, atomically: false, encoding: .utf8)
                moved.append(name)
            }

            let trace = sandbox.file("trace")
            let outcome = try ChildProcess.run(
                executable: strace,
                arguments: ["-f", "-qq", "-y", "-e", "trace=open,openat,openat2", "-o", trace, try FlowrunBinary.path()]
                    + sandbox.arguments(workflow, ["--keep", "2"]),
                environment: sandbox.environment.map { "\($0.key)=\($0.value)" } + ["PATH=/usr/bin:/bin"], directory: sandbox.path,
                stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"), timeout: .seconds(60), launcher: nil)
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stdout") ?? "") \(sandbox.read("stderr") ?? "")")
            let newest = try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.logDirectory + "/latest")
            #expect(isMicrosecondRunID(newest) && !moved.contains(newest), "\(newest)")
            // This run and the one of that second that started last: by id, not by what its first event says.
            #expect(runFolders(in: sandbox.logDirectory) == [moved[3], newest])
            let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n")
            #expect(!lines.isEmpty, "strace wrote nothing to \(trace)")
            let reads = lines.filter { $0.contains("events.jsonl") && $0.contains(second) }
            #expect(reads.isEmpty, "the no-op run opened other runs' events.jsonl:\n\(reads.joined(separator: "\n"))")
        }

        /// The run starts at the instant its id names: `run_started`'s
        /// `time` minus its `elapsed` is the id's local time and
        /// microseconds (within the milliseconds the two are written to).
        @Test func aRunStartsAtTheInstantItsIdNames() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: "tasks:\n  a: { run: 'true' }\n")
            let run = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment, timeout: .seconds(60))
            #expect(run.exitStatus == 0, "\(run)")
            let id = try #require(runFolders(in: sandbox.logDirectory).first)
            #expect(isMicrosecondRunID(id), "\(id)")
            let started = try #require(try RunRecordFiles(directory: sandbox.logDirectory + "/" + id).events("run_started").first)
            let time = try #require(started["time"] as? String)
            let elapsed = try #require(started["elapsed"] as? Double)
            let parser = ISO8601DateFormatter()
            parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let wall = try #require(parser.date(from: time), "\(time)").timeIntervalSince1970
            // The id's date and time are local (the test and the run share the time zone).
            var parts = tm()
            let digits = Array(id.utf8).map { Int32($0) - 48 }
            func number(_ range: Range<Int>) -> Int32 { range.reduce(0) { $0 * 10 + digits[$1] } }
            parts.tm_year = number(0..<4) - 1900
            parts.tm_mon = number(4..<6) - 1
            parts.tm_mday = number(6..<8)
            parts.tm_hour = number(9..<11)
            parts.tm_min = number(11..<13)
            parts.tm_sec = number(13..<15)
            parts.tm_isdst = -1
            let instant = Double(mktime(&parts)) + Double(number(16..<22)) / 1e6
            #expect(abs(wall - elapsed - instant) < 0.002, "run_started at \(time), elapsed \(elapsed); the id says \(instant)")
        }
    }
}
