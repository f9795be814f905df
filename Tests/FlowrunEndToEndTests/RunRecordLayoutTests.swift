import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
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
            let logs = Self.files(record.directory + "/logs")
            #expect(logs.count == 1 && logs.allSatisfy { $0.hasPrefix("000/") && $0.hasSuffix("-loud.log") }, "\(logs)")
            #expect(record.task("quiet")?["log"] == nil, "\(record.tasks)")
            let loudLog = try #require(record.task("loud")?["log"] as? String)
            #expect(loudLog.hasPrefix(record.directory + "/logs/000/") && ProcessProbe.text(loudLog) == "spoken\n", "\(loudLog)")
            #expect(record.outputs("loud") == ["k": "v"], "\(record.tasks)")

            let quiet = try RunHistoryTests.flowrun(["logs", "quiet"], sandbox)
            quiet.expectNoCrash()
            #expect(quiet.exitStatus == 0 && quiet.stdout.isEmpty, "\(quiet)")
            #expect(quiet.stderr.contains("'quiet'"), "\(quiet)")
            let loud = try RunHistoryTests.flowrun(["logs", "loud"], sandbox)
            #expect(loud.exitStatus == 0 && loud.stdout == "spoken\n", "\(loud)")
            let show = try RunHistoryTests.flowrun(["show"], sandbox)
            show.expectNoCrash()
            #expect(show.exitStatus == 0 && show.stdout.contains("quiet") && show.stdout.contains("loud"), "\(show)")
        }

        /// 25,000 members that each print a line: every one has its log, and
        /// no folder of the record holds more than 10,000 entries (a flat
        /// `logs/` would hold 25,000).
        @Test func aLargeFanOutLeavesNoFolderOverTenThousandEntries() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                max_parallel: 8
                groups:
                  many:
                    foreach: {range: [1, 25000]}
                    task: {run: 'echo "$FLOWRUN_ITEM"'}
                """, output: "json", timeout: .seconds(900))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run.stderr.suffix(2000))")
            let folders = runFolders(in: sandbox.logDirectory)
            let directory = sandbox.logDirectory + "/" + (folders.first ?? "none")
            let sizes = Self.folderSizes(directory)
            let largest = sizes.max { $0.entries < $1.entries }
            #expect(largest.map { $0.entries <= 10_000 } == true, "largest folder: \(String(describing: largest))")
            #expect(Self.files(directory + "/logs").count == 25_000)
            let events = ProcessProbe.text(directory + "/events.jsonl") ?? ""
            #expect(events.contains(#""succeeded":25000"#), "\(events.suffix(600))")
        }
    }
}
