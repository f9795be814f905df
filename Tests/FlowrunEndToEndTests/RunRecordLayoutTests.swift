import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// The run record's layout at scale (issue 20): a task that printed
    /// nothing has no log file, and `logs/` is sharded
    /// (`logs/000/000042-NAME.log`) so no folder of the record holds more
    /// than 10,000 entries however many tasks printed.
    @Suite struct RunRecordLayoutTests {
        /// Every folder under `path` (itself included) with how many entries it holds.
        static func folderSizes(_ path: String) -> [(path: String, entries: Int)] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            var sizes = [(path, names.count)]
            for name in names {
                var info = stat()
                if lstat(path + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                    sizes += folderSizes(path + "/" + name)
                }
            }
            return sizes
        }

        /// Every plain file under `path`, relative to it.
        static func files(_ path: String, prefix: String = "") -> [String] {
            var found: [String] = []
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                var info = stat()
                guard lstat(path + "/" + name, &info) == 0 else { continue }
                if info.st_mode & S_IFMT == S_IFDIR {
                    found += files(path + "/" + name, prefix: prefix + name + "/")
                } else {
                    found.append(prefix + name)
                }
            }
            return found
        }

        /// A task that prints nothing leaves no file; `flowrun logs` shows
        /// its log as empty (exit 0, saying why on stderr), `show` reads the
        /// run, and the task that printed has its log in a shard of `logs/`.
        @Test func aTaskThatPrintsNothingHasNoLogFile() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  quiet: {run: "true"}
                  loud: {run: "echo spoken; echo k=v >> \\"$FLOWRUN_OUTPUT\\""}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            // loud's short, small log is packed (logs/small.pack, found by logs/small.index); quiet's is nowhere.
            let logs = Self.files(record.directory + "/logs")
            #expect(logs.sorted() == ["small.index", "small.pack"], "\(logs)")
            #expect(record.task("quiet")?["log"] == nil, "\(record.tasks)")
            let loudLog = try #require(record.task("loud")?["log"] as? String)
            #expect(loudLog.hasPrefix(record.directory + "/logs/000/") && record.logText("loud") == "spoken\n", "\(loudLog)")
            #expect(record.outputs("loud") == ["k": "v"], "\(record.tasks)")

            let quiet = try RunEndToEndParallel.RunHistoryTests.flowrun(["logs", "quiet"], sandbox)
            quiet.expectNoCrash()
            #expect(quiet.exitStatus == 0 && quiet.stdout.isEmpty, "\(quiet)")
            #expect(quiet.stderr.contains("'quiet'"), "\(quiet)")
            let loud = try RunEndToEndParallel.RunHistoryTests.flowrun(["logs", "loud"], sandbox)
            #expect(loud.exitStatus == 0 && loud.stdout == "spoken\n", "\(loud)")
            let show = try RunEndToEndParallel.RunHistoryTests.flowrun(["show"], sandbox)
            show.expectNoCrash()
            #expect(show.exitStatus == 0 && show.stdout.contains("quiet") && show.stdout.contains("loud"), "\(show)")
        }

        /// What a task printed in its first moment is kept in memory (for
        /// the pack), but never lost when flowrun is stopped then: SIGTERM
        /// arrives as soon as the task has printed and said so, the task
        /// is stopped, and its log holds the line (packed, or in its file
        /// if the moment had passed).
        @Test func outputHeldInMemoryIsKeptWhenFlowrunIsStopped() throws {
            let sandbox = try RunSandbox()
            let live = try sandbox.start("""
                tasks:
                  talker: {run: 'echo "said before the stop"; echo ready > "$SANDBOX/ready"; exec sleep 30'}
                """)
            #expect(sandbox.waitFor("ready"), "talker never printed")
            kill(live.pid, SIGTERM)
            let ended = live.finish()
            #expect(!ended.hung, "flowrun did not stop: \(ended)")
            let log = try RunEndToEndParallel.RunHistoryTests.flowrun(["logs", "talker"], sandbox)
            #expect(log.exitStatus == 0 && log.stdout == "said before the stop\n", "\(log)")
        }

        /// 20,000 members that each print a line (`echo`) leave a handful
        /// of files, not 20,000 of 4 KiB each: a short attempt's small log
        /// is packed (logs/small.pack). No folder holds more than 10,000
        /// entries, and `flowrun logs` gives each task exactly what it
        /// printed: a member, one retried (a small attempt packed, the next
        /// in the pack too), one that printed more than the pack takes, one
        /// that ran past the moment (its own file), one that printed nothing.
        @Test func aLargeFanOutLeavesFewFilesAndNoFolderOverTenThousandEntries() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                max_parallel: 8
                tasks:
                  retried:
                    run: 'echo "try $FLOWRUN_ATTEMPT"; [ "$FLOWRUN_ATTEMPT" = 2 ]'
                    retries: 1
                    retry_delay: 10ms
                  wordy: {run: 'head -c 5000 /dev/zero | tr "\\0" w; echo'}
                  lasting: {run: 'echo early; sleep 0.4; echo late'}
                  silent: {run: "true"}
                groups:
                  many:
                    foreach: {range: [1, 20000]}
                    task: {run: 'echo "hi $FLOWRUN_ITEM"'}
                """, output: "json", timeout: .seconds(900))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run.stderr.suffix(2000))")
            let folders = runFolders(in: sandbox.logDirectory)
            let directory = sandbox.logDirectory + "/" + (folders.first ?? "none")
            let sizes = Self.folderSizes(directory)
            let largest = sizes.max { $0.entries < $1.entries }
            #expect(largest.map { $0.entries <= 10_000 } == true, "largest folder: \(String(describing: largest))")
            let files = Self.files(directory + "/logs")
            // The pack, its index, wordy's and lasting's own files, and a few members slow enough to run past the moment.
            #expect(files.count < 200, "\(files.count) files for 20,004 tasks: \(files.prefix(20))")
            #expect(files.contains("small.pack") && files.contains("small.index"), "\(files.prefix(20))")
            let events = ProcessProbe.text(directory + "/events.jsonl") ?? ""
            #expect(events.contains(#""succeeded":20004"#), "\(events.suffix(600))")

            func logs(_ task: String) throws -> String {
                let shown = try RunEndToEndParallel.RunHistoryTests.flowrun(["logs", task], sandbox)
                #expect(shown.exitStatus == 0, "\(shown)")
                return shown.stdout
            }
            for item in [1, 2, 999, 1000, 12345, 20000] {
                #expect(try logs("many[\(item - 1)]") == "hi \(item)\n")
            }
            #expect(try logs("retried") == "try 1\ntry 2\n")
            #expect(try logs("wordy") == String(repeating: "w", count: 5000) + "\n")
            #expect(try logs("lasting") == "early\nlate\n")
            #expect(try logs("silent") == "")
            let own = files.filter { $0.hasSuffix("-wordy.log") || $0.hasSuffix("-lasting.log") }
            #expect(own.count == 2, "wordy and lasting have their own files: \(files.prefix(20))")
        }
    }
}
