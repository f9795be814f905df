import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// The console's drain at exit with a reader that reads, slowly.
    @Suite struct ConsoleSlowReaderTests {
        /// stdout a pipe read at ~100 KB/s, `--stream`, a task printing
        /// ~500 KB at once (under the 1 MiB buffer, so nothing is dropped
        /// while it runs): flowrun must wait while bytes get through (RUNNING.md:
        /// "at most 2 s without a byte getting through, 10 s in all"). It handed
        /// the whole backlog to one blocking `write`, which returns only when
        /// the reader has taken all of it (~4 s here): no progress seen for
        /// 2 s, so it gave up on a reader that was reading, and counted as
        /// dropped lines the reader then got.
        @Test func aSlowReaderThatKeepsReadingGetsEveryLine() throws {
            let sandbox = try RunSandbox()
            let lines = 13_000  // 37 bytes each: ~480 KB
            let workflow = try sandbox.write(workflow: """
                tasks:
                  chatty: {run: "yes 'a line that the slow reader reads' | head -n \(lines)"}
                """)
            let fifo = sandbox.file("console")
            #expect(mkfifo(fifo, 0o600) == 0)
            // Opened read-write (flowrun's open never waits), non-blocking (the reader can stop).
            let reader = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            #expect(reader >= 0)
            defer { close(reader) }
            let finished = Atomic(false)
            let received = Mutex<[UInt8]>([])
            let thread = Thread {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = read(reader, &buffer, buffer.count)
                    if count > 0 {
                        received.withLock { $0 += buffer[0..<count] }
                    } else if finished.load(ordering: .acquiring) {
                        return
                    }
                    usleep(40_000)  // 4 KiB per 40 ms: ~100 KB/s, steadily
                }
            }
            thread.start()
            let outcome = try ChildProcess.run(
                executable: try FlowrunBinary.path(), arguments: sandbox.arguments(workflow, ["--stream"]),
                environment: RunConsoleTests.environment(sandbox), directory: sandbox.path,
                stdoutPath: fifo, stderrPath: sandbox.file("stderr"), timeout: .seconds(60), launcher: nil)
            finished.store(true, ordering: .releasing)
            while !thread.isFinished { usleep(10_000) }
            let stderr = sandbox.read("stderr") ?? ""
            #expect(!outcome.timedOut)
            #expect(outcome.exitStatus == 0, "stderr: \(stderr)")
            let got = String(decoding: received.withLock { $0 }, as: UTF8.self)
            let taskLines = got.split(separator: "\n").filter { $0.contains("a line that the slow reader reads") }.count
            #expect(taskLines == lines, "the reader got \(taskLines) of \(lines) lines; stderr: \(stderr)")
            #expect(!stderr.contains("dropped"), "\(stderr)")
        }
    }
}
