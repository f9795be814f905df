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

        /// A named pipe at a task's `.flowrun/state` file name (the state folder is
        /// private, but its owner or root may leave one there): opened to be read, it
        /// blocked until a writer came, so every later run and dry run hung for good,
        /// printing nothing. Now it is no state: the task runs and its state is written again.
        @Test func aNamedPipeAtAStateFileIsNoStateAndTheRunEnds() throws {
            let sandbox = try RunSandbox()
            _ = try sandbox.directory.write("a\n", to: "a.c")
            let text = """
                tasks:
                  build:
                    sources: ["a.c"]
                    run: echo built >> "$SANDBOX/count"
                """
            let first = try sandbox.run(text, timeout: .seconds(20))
            #expect(first.exitStatus == 0, "\(first)")
            let state = sandbox.file(".flowrun/state")
            let names = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasSuffix(".json") }
            #expect(names.count == 1, "\(names)")
            for name in names {
                #expect(unlink(state + "/" + name) == 0)
                #expect(mkfifo(state + "/" + name, 0o600) == 0)
            }
            let dry = try sandbox.run(text, ["--dry-run"], timeout: .seconds(20))
            #expect(!dry.timedOut, "the dry run hung on the named pipe: \(dry)")
            let second = try sandbox.run(text, timeout: .seconds(20))
            #expect(!second.timedOut, "the run hung on the named pipe: \(second)")
            #expect(second.exitStatus == 0, "\(second)")
            #expect(sandbox.lines("count").count == 2, "\(sandbox.lines("count"))")
        }

        /// A source that matches and cannot be read (a dangling link in the folder a glob
        /// walks, a file with a name that is not UTF-8, one without read permission): the
        /// sources were hashed as one "unreadable" mark, the state recorded that mark, and
        /// the next check made the same mark and found it equal: the task stayed up to date
        /// for good, whatever was edited in its other sources. Now it runs, and keeps no state.
        @Test func aSourceThatCannotBeReadMakesTheTaskRunEveryTime() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("inc"), withIntermediateDirectories: true)
            _ = try sandbox.directory.write("one\n", to: "inc/a.h")
            #expect(symlink("nowhere", sandbox.file("inc/b.h")) == 0)
            let text = """
                tasks:
                  build:
                    sources: ["inc/*.h"]
                    run: cat inc/a.h >> "$SANDBOX/seen"
                """
            let first = try sandbox.run(text, timeout: .seconds(20))
            #expect(first.exitStatus == 0, "\(first)")
            let dry = try sandbox.run(text, ["--dry-run"], timeout: .seconds(20))
            #expect(dry.stdout.contains("build: would run (a source cannot be read)"), "\(dry)")
            _ = try sandbox.directory.write("two\n", to: "inc/a.h")
            let second = try sandbox.run(text, timeout: .seconds(20))
            #expect(second.exitStatus == 0, "\(second)")
            #expect(sandbox.lines("seen") == ["one", "two"], "the edit to inc/a.h went unseen: \(sandbox.lines("seen"))\n\(second)")
        }

        /// A source renamed from `café.h` in NFC (U+00E9) to `café.h` in NFD (e, U+0301),
        /// content unchanged: two names, two files on Linux, and the task lists another
        /// file than before. Paths were compared with Swift's `==` (canonical equivalence),
        /// which finds the two equal: the task stayed up to date. Now compared by bytes.
        @Test func aSourceRenamedToAnotherUnicodeNormalFormIsAChange() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("inc"), withIntermediateDirectories: true)
            let composed = "inc/caf\u{E9}.h", decomposed = "inc/cafe\u{301}.h"
            #expect(Array(composed.utf8) != Array(decomposed.utf8))
            _ = try sandbox.directory.write("same\n", to: composed)
            let text = """
                tasks:
                  build:
                    sources: ["inc/*.h"]
                    run: echo ran >> "$SANDBOX/count"
                """
            let first = try sandbox.run(text, timeout: .seconds(20))
            #expect(first.exitStatus == 0, "\(first)")
            #expect(rename(sandbox.file(composed), sandbox.file(decomposed)) == 0)
            let second = try sandbox.run(text, timeout: .seconds(20))
            #expect(second.exitStatus == 0, "\(second)")
            #expect(sandbox.lines("count").count == 2, "the rename went unseen\n\(second)")
        }

        /// Two sources whose names differ only in their Unicode normal form (`café.h`
        /// NFC and NFD): two files. The glob's matches were a `Set<String>`, which keeps
        /// one of them, and this run's hashes were found by `String` key, which gives
        /// one file's hash for the other: an edit to the file left out went unseen.
        @Test func twoSourcesWhoseNamesDifferOnlyInNormalFormAreBothChecked() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("inc"), withIntermediateDirectories: true)
            let composed = "inc/caf\u{E9}.h", decomposed = "inc/cafe\u{301}.h"
            _ = try sandbox.directory.write("A\n", to: composed)
            _ = try sandbox.directory.write("B\n", to: decomposed)
            let text = """
                tasks:
                  build:
                    sources: ["inc/*.h"]
                    run: echo ran >> "$SANDBOX/count"
                """
            #expect(try sandbox.run(text, timeout: .seconds(20)).exitStatus == 0)
            for (number, file) in [composed, decomposed, composed].enumerated() {
                _ = try sandbox.directory.write("edit \(number)\n", to: file)
                let run = try sandbox.run(text, timeout: .seconds(20))
                #expect(run.exitStatus == 0, "\(run)")
                #expect(sandbox.lines("count").count == number + 2, "the edit to \(file) went unseen\n\(run)")
            }
        }
    }
}
