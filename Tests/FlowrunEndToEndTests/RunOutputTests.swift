import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEndParallel {
    /// SPEC §2 "Outputs: the stash", §7 run record: output streams to the
    /// task's log as it arrives (no pipe deadlock, flat memory), the stash
    /// keeps the last 1 MiB, progress lines are events, not output.
    @Suite struct RunOutputTests {
        static let bigSize = 200_000_000

        /// 200 MB on stdout (and a line on stderr before and after): the task
        /// finishes, flowrun's own peak RSS (measured by the harness's exact
        /// launcher) stays under 50 MB, the log holds every byte, the stash
        /// is the last 1 MiB.
        @Test func twoHundredMegabytesOnStdoutLandInTheLogWithFlatMemory() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  flood:
                    run: |
                      echo "before the flood" >&2
                      head -c \(Self.bigSize) /dev/zero | tr '\\0' 'x'
                      echo "after the flood" >&2
                """, timeout: .seconds(90))
            print(String(format: "run-output 200MB: %.2f s wall, %.1f MB peak RSS%@", run.wallSeconds, run.peakRSSMegabytes,
                         run.peakRSSIsExact ? "" : " (inexact)"))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.peakRSSIsExact, "no C compiler for the RSS launcher: the figure includes the test runner")
            #expect(run.peakRSSMegabytes < 50, "flowrun's peak RSS was \(run.peakRSSMegabytes) MB\n\(run)")

            let record = try sandbox.record()
            #expect(record.status("flood") == "succeeded", "\(record.overview)")
            let logSize = try Self.size(of: record.logPath("flood"))
            let stderrBytes = "before the flood\n".utf8.count + "after the flood\n".utf8.count
            #expect(logSize == Self.bigSize + stderrBytes, "the log holds \(logSize) bytes, expected \(Self.bigSize) + \(stderrBytes) of stderr")
            // The log's start and end: stderr lines around the flood.
            let head = try Self.bytes(of: record.logPath("flood"), from: 0, count: 17)
            #expect(String(decoding: head, as: UTF8.self) == "before the flood\n")
            // stdout and stderr come through two pipes, read in turn, so the
            // last stderr line may precede the last pipe-full of x.
            let tail = try Self.bytes(of: record.logPath("flood"), from: logSize - 300_000, count: 300_000)
            #expect(String(decoding: tail, as: UTF8.self).contains("xxxxafter the flood\nxxxx")
                        || String(decoding: tail, as: UTF8.self).hasSuffix("xafter the flood\n"), "no 'after the flood' line near the end of the log")

            let stash = try #require(record.stdout("flood"))
            #expect(stash.utf8.count <= 1 << 20, "the stash holds \(stash.utf8.count) bytes, more than 1 MiB")
            #expect(stash.utf8.count >= (1 << 20) - 1, "the stash should be the last 1 MiB, holds \(stash.utf8.count) bytes")
            #expect(stash.utf8.allSatisfy { $0 == UInt8(ascii: "x") }, "the stash holds bytes other than the task's stdout")
            let summarySize = try Self.size(of: record.directory + "/summary.json")
            #expect(summarySize < 2 << 20, "summary.json is \(summarySize) bytes")
        }

        /// stdout and stderr both land in the log; stderr never reaches the stash.
        @Test func stderrLandsInTheLogButNotInTheStash() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  both:
                    run: |
                      echo out-1
                      echo err-1 >&2
                      echo out-2
                      echo err-2 >&2
                      exit 3
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("both") == "failed")
            #expect(record.stdout("both") == "out-1\nout-2")
            #expect(integer(record.task("both")?["exit_code"]) == 3)
            let log = try #require(record.logText("both"))
            for line in ["out-1", "err-1", "out-2", "err-2"] {
                #expect(log.contains(line + "\n"), "the log lacks \(line):\n\(log)")
            }
            // The plain reporter shows a failed task's log tail and its path.
            #expect(run.stdout.contains("| err-2"), "\(run)")
            #expect(run.stdout.contains("log: \(record.logPath("both"))"), "\(run)")
        }

        /// The log is created at the first byte: a task that printed nothing
        /// has none (no file, no `path` in its event, no `log` in the
        /// summary, no `log:` line), one that printed only to stderr has one.
        @Test func aTaskThatPrintsNothingHasNoLog() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  quiet:
                    run: "true"
                  quiet-failure:
                    run: exit 4
                  only-stderr:
                    run: echo "to stderr" >&2
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("quiet") == "succeeded")
            #expect(record.status("quiet-failure") == "failed")
            for quiet in ["quiet", "quiet-failure"] {
                #expect(access(record.logPath(quiet), F_OK) != 0, "\(quiet) printed nothing but has a log")
                #expect(record.finished(quiet)?["path"] == nil, "\(String(describing: record.finished(quiet)))")
                #expect(record.task(quiet)?["log"] == nil, "\(String(describing: record.task(quiet)))")
            }
            #expect(record.logText("only-stderr") == "to stderr\n")
            #expect(record.finished("only-stderr")?["path"] as? String == record.logPath("only-stderr"))
            #expect(record.task("only-stderr")?["log"] as? String == record.logPath("only-stderr"))
            // The failure is reported without a log tail or path to show.
            #expect(run.stdout.contains("FAILED   quiet-failure (exit 4"), "\(run)")
            #expect(!run.stdout.contains("log: \(record.logPath("quiet-failure"))"), "\(run)")
        }

        /// Every way of making the `$FLOWRUN_OUTPUT` file must be seen, by
        /// the task's downstream and in the summary, also when it is written
        /// after the task closed its output (flowrun then hears of the
        /// write from the kernel before it hears of the exit).
        @Test func everyWayOfWritingTheOutputsFileIsSeen() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  appended: {run: 'echo "v=appended" >> "$FLOWRUN_OUTPUT"'}
                  by-grandchild: {run: '(sleep 0.2; echo "v=grandchild" > "$FLOWRUN_OUTPUT") & wait'}
                  moved: {run: 'echo "v=moved" > "$SANDBOX/moved.tmp" && mv "$SANDBOX/moved.tmp" "$FLOWRUN_OUTPUT"'}
                  linked: {run: 'echo "v=linked" > "$SANDBOX/linked.tmp" && ln "$SANDBOX/linked.tmp" "$FLOWRUN_OUTPUT"'}
                  after-closing-output: {run: 'exec >&- 2>&-; sleep 0.1; echo "v=late" >> "$FLOWRUN_OUTPUT"'}
                  second-attempt:
                    retries: 1
                    retry_delay: 10ms
                    run: '[ "$FLOWRUN_ATTEMPT" = 2 ] || exit 1; echo "v=second" >> "$FLOWRUN_OUTPUT"'
                  none: {run: "true"}
                  report:
                    needs: [appended, by-grandchild, moved, linked, after-closing-output, second-attempt, none]
                    run: |
                      for value in ${{ tasks.appended.outputs.v }} ${{ tasks.by-grandchild.outputs.v }} ${{ tasks.moved.outputs.v }} \\
                                   ${{ tasks.linked.outputs.v }} ${{ tasks.after-closing-output.outputs.v }} ${{ tasks.second-attempt.outputs.v }}; do
                        echo "$value" >> "$SANDBOX/values"
                      done
                      echo none:${{ tasks.none.outputs.v }} >> "$SANDBOX/values"
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("values") == ["appended", "grandchild", "moved", "linked", "late", "second", "none:"])
            let record = try sandbox.record()
            #expect(record.task("moved")?["outputs"] as? [String: String] == ["v": "moved"])
            #expect(record.task("none")?["outputs"] as? [String: String] == [:])
        }

        /// A task that moves `outputs/` away and makes a new one: later
        /// outputs must still be seen (flowrun holds no handle on the old folder).
        @Test func outputsAreSeenAfterATaskReplacesTheOutputsFolder() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  replace-folder:
                    run: 'folder="$(dirname "$FLOWRUN_OUTPUT")"; mv "$folder" "$folder.old" && mkdir "$folder"'
                  writer:
                    needs: [replace-folder]
                    run: 'echo "v=after" >> "$FLOWRUN_OUTPUT"'
                  report:
                    needs: [writer]
                    run: echo ${{ tasks.writer.outputs.v }} > "$SANDBOX/value"
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("value") == ["after"])
        }

        /// Output that cannot be kept fails the task, with the reason: here the
        /// task removes the run's logs folder before it prints, so its log
        /// cannot be created. flowrun neither crashes nor loses the record.
        @Test func aLogThatCannotBeCreatedFailsTheTask() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  unloggable:
                    run: |
                      rm -rf "$(dirname "$(dirname "$FLOWRUN_OUTPUT")")/logs"
                      echo "this line has nowhere to go"
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("unloggable") == "failed", "\(record.overview)")
            let reason = record.finished("unloggable")?["reason"] as? String ?? ""
            // A short attempt's small log goes to logs/small.pack, made at the first one; one that
            // ran past the moment (a loaded machine) gets a file of its own, which cannot be created.
            let problem = reason.hasPrefix("cannot create ")
                ? "cannot create \(record.directory)/logs/000/000000-unloggable.log"
                : "cannot write \(record.directory)/logs/small.pack"
            #expect(reason.hasPrefix(problem + ": No such file or directory"), "\(reason)")
            #expect(run.stdout.contains("FAILED   unloggable ("), "\(run)")
            #expect(run.stdout.contains(problem), "\(run)")
            // A record file that could not be written is said once on stderr too.
            #expect(run.stderr.contains("flowrun: the run record is incomplete: \(problem)"), "\(run)")
            #expect(record.stdout("unloggable") == "this line has nowhere to go", "the stash still holds the output")
        }

        /// `::progress::N` lines become task_progress events (in order) and
        /// are left out of the stash; the log keeps everything printed. The
        /// task prints the next line only once the event for the previous one
        /// is in events.jsonl, so no two progress lines share a read.
        @Test func progressLinesAreEventsNotOutput() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  steps:
                    run: |
                      events="$(dirname "$(dirname "$FLOWRUN_OUTPUT")")/events.jsonl"
                      seen() { n=0; until grep -q "progress.:$1[,}]" "$events"; do n=$((n+1)); [ $n -gt 1000 ] && return 1; sleep 0.01; done; }
                      echo first
                      echo "::progress::25"
                      seen 25
                      echo second
                      echo "::progress::75"
                      seen 75
                      echo "::progress::100"
                      echo third
                  reader:
                    needs: steps
                    run: printf '%s' ${{ tasks.steps.stdout }} > "$SANDBOX/seen"
                """, output: "json")
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let progress = record.events("task_progress", task: "steps").compactMap { integer($0["progress"]) }
            #expect(progress == [25, 75, 100], "\(record.overview)")
            #expect(record.stdout("steps") == "first\nsecond\nthird")
            #expect(sandbox.read("seen") == "first\nsecond\nthird")
            let log = try #require(record.logText("steps"))
            #expect(log == "first\n::progress::25\nsecond\n::progress::75\n::progress::100\nthird\n", "the log keeps every line printed")
            // --output json prints the same events as events.jsonl.
            let printed = run.stdout.split(separator: "\n").map(String.init)
            let problem = try RunEndToEndParallel.EventsSchemaTests.difference(console: printed, file: record.eventLines.filter { !$0.isEmpty })
            #expect(problem == nil, "--output json and events.jsonl differ: \(problem ?? "")\n\(run)")
        }

        /// A burst of progress lines read at once may be reported as its
        /// latest value only (a coalescing choice, fine for a progress bar):
        /// each value reported is one the task printed, the last is the last
        /// printed, and no progress line reaches the stash. Lines that only
        /// look like progress stay output.
        @Test func aBurstOfProgressLinesEndsAtTheLastValue() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  burst:
                    run: |
                      echo "::progress::abc"
                      echo "::progress::150"
                      echo "say ::progress::50"
                      i=0; while [ $i -le 100 ]; do echo "::progress::$i"; echo "line $i"; i=$((i+10)); done
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let progress = record.events("task_progress", task: "burst").compactMap { integer($0["progress"]) }
            #expect(progress.last == 100, "\(progress)")
            #expect(progress.allSatisfy { $0 % 10 == 0 }, "\(progress)")
            let stash = try #require(record.stdout("burst"))
            let expected = ["::progress::abc", "::progress::150", "say ::progress::50"] + stride(from: 0, through: 100, by: 10).map { "line \($0)" }
            #expect(stash == expected.joined(separator: "\n"))
        }

        /// Output is written to the log as it arrives, not at the end: while
        /// the task still runs, its log already holds what it printed.
        @Test func theLogIsWrittenWhileTheTaskRuns() throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                tasks:
                  slow:
                    run: |
                      echo "early line"
                      echo "early error" >&2
                      while [ ! -e "$SANDBOX/go" ]; do sleep 0.02; done
                      echo "late line"
                """)
            let logged = poll(until: .seconds(15)) {
                guard let run = runFolders(in: sandbox.logDirectory).first else { return false }
                let logs = sandbox.logDirectory + "/" + run + "/logs/000"
                let file = (try? FileManager.default.contentsOfDirectory(atPath: logs))?.first { $0.hasSuffix("-slow.log") }
                let log = file.flatMap { ProcessProbe.text(logs + "/" + $0) } ?? ""
                return log.contains("early line\n") && log.contains("early error\n")
            }
            #expect(logged, "the log did not show the task's output while it ran")
            #expect(FileManager.default.createFile(atPath: sandbox.file("go"), contents: nil))
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 0, "\(ended)")
            let record = try sandbox.record()
            #expect(record.stdout("slow") == "early line\nlate line")
        }

        /// 100 printing tasks at once under a descriptor limit of 400 all
        /// run (three descriptors each: two pipes and the log, plus what
        /// flowrun inherits from the test runner), and what they print arrives.
        @Test func manyTasksAtOnceNearTheDescriptorLimitAllRun() throws {
            let sandbox = try RunSandbox()
            let tasks = (1...100).map { "  t\($0): {run: 'echo start; sleep 0.5; echo end >&2; echo done >> \"$SANDBOX/done\"'}" }
            let workflow = try sandbox.write(workflow: "max_parallel: 100\ntasks:\n" + tasks.joined(separator: "\n"))
            let outcome = try ChildProcess.run(
                executable: "/usr/bin/prlimit", arguments: ["--nofile=400", try FlowrunBinary.path()] + sandbox.arguments(workflow, []),
                environment: sandbox.environment.map { "\($0.key)=\($0.value)" } + ["PATH=/usr/bin:/bin"],
                directory: sandbox.path, stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"),
                timeout: .seconds(30), launcher: nil)
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stdout") ?? "")")
            #expect(sandbox.lines("done").count == 100)
            let record = try sandbox.record()
            #expect(record.stdout("t100") == "start")
        }

        static func size(of path: String) throws -> Int {
            var info = stat()
            guard stat(path, &info) == 0 else { throw FlowrunBinaryError("stat \(path): \(String(cString: strerror(errno)))") }
            return Int(info.st_size)
        }

        static func bytes(of path: String, from offset: Int, count: Int) throws -> [UInt8] {
            guard let handle = FileHandle(forReadingAtPath: path) else { throw FlowrunBinaryError("cannot open \(path)") }
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(offset))
            return Array(try handle.read(upToCount: count) ?? Data())
        }
    }
}
