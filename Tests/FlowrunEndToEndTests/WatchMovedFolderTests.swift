import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd.WatchTests {
    /// A watched folder renamed (`mv src/sub src/old`) keeps its inotify
    /// watch, which then watches the new name: the watcher still took
    /// `src/sub` as watched, so a folder made again under that name was never
    /// watched — a file written in it was silently missed — and a folder
    /// moved out of the tree kept reporting its changes as the old path's.
    /// Now a folder moved away is forgotten (and counts as a change of what
    /// was in it).
    @Test func aFolderRenamedAwayAndMadeAgainIsWatchedAndOneMovedOutIsNot() throws {
        let sandbox = try RunSandbox()
        try FileManager.default.createDirectory(atPath: sandbox.file("src/sub"), withIntermediateDirectories: true)
        try Self.write(sandbox, "src/sub/a.c", "a\n")
        let outside = try TemporaryDirectory()
        let live = try Self.watch(sandbox, """
            tasks:
              compile:
                sources: ["src/**/*.c"]
                run: find src -name '*.c' | sort
            """)
        #expect(Self.waitForRuns(sandbox, 1))
        try FileManager.default.moveItem(atPath: sandbox.file("src/sub"), toPath: sandbox.file("src/old"))
        #expect(Self.waitForRuns(sandbox, 2), "the rename was not seen")
        #expect(Self.runs(sandbox)[1].stdout("compile") == "src/old/a.c")

        try FileManager.default.createDirectory(atPath: sandbox.file("src/sub"), withIntermediateDirectories: true)
        try Self.write(sandbox, "src/sub/b.c", "b\n")
        #expect(Self.waitForRuns(sandbox, 3, timeout: .seconds(10)), "a file in the folder made again under the old name was missed")
        #expect(Self.runs(sandbox).dropFirst(2).first?.events("run_started").first?["trigger"] as? String == "src/sub/b.c")

        // Moved out of the tree: a change of what was in it; then what is written there is not this watch's.
        try FileManager.default.moveItem(atPath: sandbox.file("src/old"), toPath: outside.path + "/old")
        #expect(Self.waitForRuns(sandbox, 4, timeout: .seconds(10)), "the folder moved out was not seen")
        #expect(Self.runs(sandbox).dropFirst(3).first?.events("run_started").first?["trigger"] as? String == "src/old/")
        #expect(Self.runs(sandbox).dropFirst(3).first?.stdout("compile") == "src/sub/b.c")
        try "c\n".write(toFile: outside.path + "/old/c.c", atomically: false, encoding: .utf8)
        try Self.write(sandbox, "src/sub/b.c", "b2\n")
        #expect(Self.waitForRuns(sandbox, 5, timeout: .seconds(10)))
        let fifth = Self.runs(sandbox).dropFirst(4).first
        #expect(fifth?.events("run_started").first?["trigger"] as? String == "src/sub/b.c", "\(String(describing: fifth?.events("run_started")))")
        live.signalGroup(SIGINT)
        #expect(live.finish().exitStatus == 130)
    }
}

extension RunEndToEnd.WatchTests {
    /// `src/*.c` watches `src` alone. `rm -rf src` (or `mv src src.old`)
    /// took its watch away and nothing watched for it to come back: a file
    /// in `src` made again never ran anything. Now the nearest folder that
    /// exists is watched until it is made again.
    @Test func aRootFolderRemovedOrRenamedAndMadeAgainIsWatched() throws {
        let sandbox = try RunSandbox()
        try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
        try Self.write(sandbox, "src/a.c", "a\n")
        let live = try Self.watch(sandbox, """
            tasks:
              compile:
                sources: ["src/*.c"]
                run: ls src
            """)
        #expect(Self.waitForRuns(sandbox, 1))
        try FileManager.default.removeItem(atPath: sandbox.file("src"))
        #expect(Self.waitForRuns(sandbox, 2), "the removal was not seen")
        try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
        try Self.write(sandbox, "src/b.c", "b\n")
        #expect(Self.waitForRuns(sandbox, 3, timeout: .seconds(10)), "a file in src made again was missed")
        #expect(Self.runs(sandbox).dropFirst(2).first?.stdout("compile") == "b.c")

        try FileManager.default.moveItem(atPath: sandbox.file("src"), toPath: sandbox.file("src.old"))
        #expect(Self.waitForRuns(sandbox, 4, timeout: .seconds(10)), "the rename was not seen")
        try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
        try Self.write(sandbox, "src/c.c", "c\n")
        #expect(Self.waitForRuns(sandbox, 5, timeout: .seconds(10)), "a file in src made again after a rename was missed")
        #expect(Self.runs(sandbox).dropFirst(4).first?.stdout("compile") == "c.c")
        live.signalGroup(SIGINT)
        #expect(live.finish().exitStatus == 130)
    }
}
