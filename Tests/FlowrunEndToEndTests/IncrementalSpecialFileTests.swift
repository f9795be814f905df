import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// A named pipe a `sources:` glob matches (`mkfifo src/x.c`, which anyone
    /// who may write in a shared source folder can make) was opened to be
    /// hashed: the open blocks until a writer comes, so the run hung for
    /// good, SIGTERM included (and `watch` with it). Now a file that is not a
    /// regular one is never read: its type stands for its content.
    @Suite struct IncrementalSpecialFileTests {
        @Test func aNamedPipeMatchedBySourcesIsNotReadAndTheRunEnds() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            _ = try sandbox.directory.write("a\n", to: "src/a.c")
            #expect(mkfifo(sandbox.file("src/x.c"), 0o644) == 0)
            let text = """
                tasks:
                  build:
                    sources: ["src/*.c"]
                    run: echo built
                """
            let first = try sandbox.run(text, timeout: .seconds(20))
            #expect(!first.timedOut, "the run hung on the named pipe: \(first)")
            #expect(first.exitStatus == 0, "\(first)")
            let second = try sandbox.run(text, timeout: .seconds(20))
            #expect(!second.timedOut, "\(second)")
            #expect(second.exitStatus == 0, "\(second)")
        }
    }
}
