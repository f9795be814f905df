import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// `flowrun watch` where one folder has several names (`src`, `./src`,
    /// its absolute path, a link to it) and where a root does not exist yet:
    /// the built binary on real files, each wait a handshake on the record.
    @Suite struct WatchFolderNamesTests {
        typealias Watch = WatchTests

        /// How many inotify watches the engine holds (its inotify descriptor's `fdinfo`).
        static func watches(of engine: pid_t) -> Int? {
            guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(engine)/fd") else { return nil }
            for descriptor in descriptors {
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(engine)/fd/\(descriptor)"),
                      target.contains("inotify"),
                      let info = try? String(contentsOfFile: "/proc/\(engine)/fdinfo/\(descriptor)", encoding: .utf8) else { continue }
                return info.split(separator: "\n").count { $0.hasPrefix("inotify wd:") }
            }
            return nil
        }

        /// `src/*.c`, `./src/*.c` and the absolute path are one folder (one inotify
        /// watch): a write there runs every task that reads it, not only the last named.
        @Test func oneFolderSpelledThreeWaysRunsEveryTaskThatReadsIt() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            try Watch.write(sandbox, "src/a.c", "a\n")
            let live = try Watch.watch(sandbox, """
                tasks:
                  plain:
                    sources: ["src/*.c"]
                    run: echo plain
                  dotted:
                    sources: ["./src/*.c"]
                    run: echo dotted
                  absolute:
                    sources: ["\(sandbox.file("src"))/*.c"]
                    run: echo absolute
                """)
            #expect(Watch.waitForRuns(sandbox, 1), "the first run never finished")
            try Watch.write(sandbox, "src/a.c", "A\n")
            #expect(Watch.waitForRuns(sandbox, 2), "no run after the change")
            let second = Watch.runs(sandbox)[1]
            #expect(Watch.started(second) == ["plain", "dotted", "absolute"], "\(second.names("task_started"))")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// `src/*/*.c` follows a link `src/x` → `../real/x` (the glob does): a write
        /// in the linked folder runs the task, and so does a link made later and a write behind it.
        @Test func aSourceBehindALinkedFolderIsSeen() throws {
            let sandbox = try RunSandbox()
            for folder in ["src/y", "real/x", "real/z"] {
                try FileManager.default.createDirectory(atPath: sandbox.file(folder), withIntermediateDirectories: true)
            }
            try FileManager.default.createSymbolicLink(atPath: sandbox.file("src/x"), withDestinationPath: "../real/x")
            try Watch.write(sandbox, "src/y/b.c", "b\n")
            try Watch.write(sandbox, "real/x/a.c", "a\n")
            try Watch.write(sandbox, "real/z/c.c", "c\n")
            let live = try Watch.watch(sandbox, """
                tasks:
                  cc:
                    sources: ["src/*/*.c"]
                    run: cat src/*/*.c | tr -d '\\n'
                """)
            #expect(Watch.waitForRuns(sandbox, 1), "the first run never finished")
            #expect(Watch.runs(sandbox)[0].stdout("cc") == "ab")

            try Watch.write(sandbox, "real/x/a.c", "A\n")
            #expect(Watch.waitForRuns(sandbox, 2), "a write behind the link started no run")
            #expect(Watch.runs(sandbox).count >= 2 && Watch.runs(sandbox)[1].stdout("cc") == "Ab")

            try FileManager.default.createSymbolicLink(atPath: sandbox.file("src/z"), withDestinationPath: "../real/z")
            #expect(Watch.waitForRuns(sandbox, 3), "a link made later started no run")
            #expect(Watch.runs(sandbox).count >= 3 && Watch.runs(sandbox)[2].stdout("cc") == "Abc")

            try Watch.write(sandbox, "real/z/c.c", "C\n")
            #expect(Watch.waitForRuns(sandbox, 4), "a write behind the link made later started no run")
            #expect(Watch.runs(sandbox).count >= 4 && Watch.runs(sandbox)[3].stdout("cc") == "AbC")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// A root not made yet (`big/gen/*.h`) is waited for from `big`, watched
        /// alone — not `big` and its 200 folders (`/tmp` whole, for an absolute root;
        /// the current folder, missing its creation, for one at the top of `/`).
        @Test func aRootNotMadeYetIsWaitedForWithoutWatchingItsParentWhole() throws {
            let sandbox = try RunSandbox()
            for number in 0..<200 {
                try FileManager.default.createDirectory(atPath: sandbox.file("big/d\(number)/e"), withIntermediateDirectories: true)
            }
            let live = try Watch.watch(sandbox, """
                tasks:
                  headers:
                    sources: ["big/gen/*.h"]
                    run: cat big/gen/*.h 2>/dev/null | tr -d '\\n'
                """)
            #expect(Watch.waitForRuns(sandbox, 1), "the first run never finished")
            let engine = try #require(live.engine())
            let count = Self.watches(of: engine)
            #expect(count != nil && count! <= 3, "\(count.map(String.init) ?? "no inotify descriptor") watches")

            try FileManager.default.createDirectory(atPath: sandbox.file("big/gen"), withIntermediateDirectories: true)
            try Watch.write(sandbox, "big/gen/a.h", "a\n")
            #expect(Watch.waitForRuns(sandbox, 2), "a file in the root made later started no run")
            let last = Watch.runs(sandbox).last
            #expect(last?.stdout("headers") == "a", "\(last?.names("task_started") ?? [])")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        /// `sources: [src]` is a folder, hashed by its list of names (FORMAT.md):
        /// a file added to it, or removed, runs the task.
        @Test func aFileAddedToAFolderSourceRunsTheTask() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            try Watch.write(sandbox, "src/a", "a\n")
            let live = try Watch.watch(sandbox, """
                tasks:
                  list:
                    sources: [src]
                    run: ls src | tr '\\n' ' '
                """)
            #expect(Watch.waitForRuns(sandbox, 1), "the first run never finished")
            try Watch.write(sandbox, "src/b", "b\n")
            #expect(Watch.waitForRuns(sandbox, 2), "a file added to the folder started no run")
            #expect(Watch.runs(sandbox).count >= 2 && Watch.runs(sandbox)[1].stdout("list") == "a b ")
            try FileManager.default.removeItem(atPath: sandbox.file("src/a"))
            #expect(Watch.waitForRuns(sandbox, 3), "a file removed from the folder started no run")
            #expect(Watch.runs(sandbox).count >= 3 && Watch.runs(sandbox)[2].stdout("list") == "b ")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}
