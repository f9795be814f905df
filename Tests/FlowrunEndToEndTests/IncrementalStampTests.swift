import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// How the incremental check avoids reading files (git's index rule):
    /// a file three tasks list is read once per run, a file whose stamp
    /// (device, inode, size, mtime, ctime) is as the state recorded it is
    /// not read at all (in a run that starts no task, not even stat'ed twice),
    /// and a stamp that changed or was not settled when it was read means
    /// reading again. Counted with strace: every open of the
    /// shared header by flowrun (the tasks run `true`, which opens nothing).
    @Suite struct IncrementalStampTests {
        static let workflow = """
            tasks:
              a: { sources: [include/shared.h, a.c], run: "true" }
              b: { sources: [include/shared.h, b.c], run: "true" }
              c: { sources: [include/shared.h, c.c], run: "true" }
            """

        /// The sandbox with the workflow and its sources, made settled: the
        /// test waits until their ctime is more than 2 s old (the margin a
        /// stamp needs, `FileStamp.settledMargin`), a wait for the clock, not a race.
        func project() throws -> RunSandbox {
            let sandbox = try RunSandbox()
            try sandbox.write(workflow: Self.workflow)
            try FileManager.default.createDirectory(atPath: sandbox.file("include"), withIntermediateDirectories: true)
            try "#define SHARED 1\n".write(toFile: sandbox.file("include/shared.h"), atomically: false, encoding: .utf8)
            for name in ["a.c", "b.c", "c.c"] { try "int \(name.first!);\n".write(toFile: sandbox.file(name), atomically: false, encoding: .utf8) }
            for name in ["include/shared.h", "a.c", "b.c", "c.c"] { waitUntilSettled(sandbox.file(name)) }
            return sandbox
        }

        func waitUntilSettled(_ path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return }
            let changed = Double(info.st_ctim.tv_sec) + Double(info.st_ctim.tv_nsec) / 1e9
            while Date().timeIntervalSince1970 < changed + 2.3 { usleep(50_000) }
        }

        /// Runs the workflow under `strace -f` and returns the run and how
        /// many times a process opened include/shared.h, and stat'ed it.
        func tracedRun(_ sandbox: RunSandbox, _ extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> (exitStatus: Int32?, started: [String], opens: Int, stats: Int) {
            let strace = try RunSandbox.tool("strace")
            let trace = sandbox.file("trace-\(UUID().uuidString)")
            for old in (try? FileManager.default.contentsOfDirectory(atPath: sandbox.logDirectory)) ?? [] {
                try? FileManager.default.removeItem(atPath: sandbox.logDirectory + "/" + old)
            }
            let outcome = try ChildProcess.run(
                executable: strace, arguments: ["-f", "-qq", "-e", "trace=open,openat,openat2,stat,lstat,newfstatat,statx", "-o", trace, try FlowrunBinary.path()]
                    + sandbox.arguments(sandbox.file("workflow.yaml"), extra),
                environment: sandbox.environment.map { "\($0.key)=\($0.value)" } + ["PATH=/usr/bin:/bin"], directory: sandbox.path,
                stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"), timeout: .seconds(60), launcher: nil)
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stdout") ?? "") \(sandbox.read("stderr") ?? "")", sourceLocation: sourceLocation)
            let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "")
                // As the check names it ("include/shared.h"; the glob's own walk looks for "./include/shared.h").
                .split(separator: "\n").filter { $0.contains("\"include/shared.h\"") && !$0.contains("ENOENT") }
            let opens = lines.filter { $0.contains("open") }.count
            let record = try sandbox.record(sourceLocation: sourceLocation)
            return (outcome.exitStatus, record.names("task_started").sorted(), opens, lines.count - opens)
        }

        @Test func aSharedFileIsReadOncePerRunAndAnUnchangedStampNotAtAll() throws {
            let sandbox = try project()
            // First run: three tasks list the header; it is read once.
            let first = try tracedRun(sandbox)
            #expect(first.started == ["a", "b", "c"])
            #expect(first.opens == 1, "the shared header was opened \(first.opens) times in one run")
            // Second run: every stamp as recorded; nothing is read, nothing runs.
            let second = try tracedRun(sandbox)
            #expect(second.started == [])
            #expect(second.opens == 0, "an unchanged header was opened \(second.opens) times")
            // No task started: the first look's stat stands for the other two.
            #expect(second.stats == 1, "an unchanged header was stat'ed \(second.stats) times in a run that started no task")
        }

        @Test func aChangedCtimeOrSizeReadsTheFileAgain() throws {
            let sandbox = try project()
            _ = try tracedRun(sandbox)
            // chmod changes the ctime alone: read again (once), same content, nothing runs.
            #expect(chmod(sandbox.file("include/shared.h"), 0o640) == 0)
            waitUntilSettled(sandbox.file("include/shared.h"))
            let chmodded = try tracedRun(sandbox)
            #expect(chmodded.opens == 1, "a header with a new ctime was opened \(chmodded.opens) times")
            #expect(chmodded.started == [])
            // And the stamp it read then was recorded: the next run reads nothing.
            #expect(try tracedRun(sandbox).opens == 0)
            // A byte more (size and times change): read again, every task runs.
            let handle = try #require(FileHandle(forWritingAtPath: sandbox.file("include/shared.h")))
            handle.seekToEndOfFile()
            handle.write(Data("\n".utf8))
            handle.closeFile()
            let grown = try tracedRun(sandbox)
            #expect(grown.opens >= 1)
            #expect(grown.started == ["a", "b", "c"])
        }

        /// A stamp not settled when the file was read (here its mtime is in
        /// the future; the same holds for a file written in the same clock
        /// tick as it was read, `ContentHashCacheTests`) may not stand for
        /// the content: the file is read every time, by each task that lists
        /// it, even though its stamp never changes.
        @Test func aStampNotSettledWhenReadIsNeverTrusted() throws {
            let sandbox = try project()
            let later = timespec(tv_sec: time(nil) + 3600, tv_nsec: 0)
            let times = [later, later]
            #expect(utimensat(AT_FDCWD, sandbox.file("include/shared.h"), times, 0) == 0)
            waitUntilSettled(sandbox.file("include/shared.h"))
            _ = try tracedRun(sandbox)
            let again = try tracedRun(sandbox)
            #expect(again.started == [])
            #expect(again.opens == 3, "a header with an mtime in the future was opened \(again.opens) times, not once per task")
        }
    }
}
