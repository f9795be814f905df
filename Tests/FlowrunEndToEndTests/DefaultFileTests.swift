import Foundation
import Testing

/// `flowrun` with no FILE finds `flowrun.yaml`/`flowrun.yml` here or in the
/// nearest parent folder and runs from that folder (SPEC §9, issue 18 item 1).
@Suite struct DefaultFileTests {
    /// The folder as the kernel names it (`getcwd`), for comparing with `pwd -P`.
    private static func real(_ path: String) throws -> String {
        try #require(realpath(path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        }, "realpath \(path)")
    }

    private static func makeFolders(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    @Test func aNestedSubfolderRunsTheParentsFileFromTheParentsFolder() throws {
        let root = try TemporaryDirectory()
        try Self.makeFolders(root.path + "/a/b")
        try Self.makeFolders(root.path + "/work")
        try root.write("""
            tasks:
              top: {run: pwd -P > top.txt}
              inside: {cwd: work, run: pwd -P > where.txt}
            """, to: "flowrun.yaml")
        let run = try FlowrunBinary.run(["--output", "plain"], in: root.path + "/a/b")
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        let base = try Self.real(root.path)
        #expect(root.read("top.txt") == base + "\n", "\(run)")
        #expect(root.read("work/where.txt") == base + "/work\n", "a relative cwd: resolves from the file's folder\n\(run)")
        let runs = try FileManager.default.contentsOfDirectory(atPath: root.path + "/.flowrun/runs")
        #expect(runs.filter { $0 != "latest" }.count == 1, "\(runs)")
        #expect(!FileManager.default.fileExists(atPath: root.path + "/a/b/.flowrun"), "the record lands beside the file, not in the subfolder")
        #expect(!FileManager.default.fileExists(atPath: root.path + "/a/b/top.txt"))
    }

    /// A relative `--log-dir` means the folder the user typed it in, even
    /// though the run moves to the found file's folder.
    @Test func aRelativeLogDirStaysWhereItWasTyped() throws {
        let root = try TemporaryDirectory()
        try Self.makeFolders(root.path + "/a")
        try root.write("tasks:\n  a: {run: \"true\"}\n", to: "flowrun.yaml")
        let run = try FlowrunBinary.run(["--output", "plain", "--log-dir", "record"], in: root.path + "/a")
        #expect(run.exitStatus == 0, "\(run)")
        #expect(FileManager.default.fileExists(atPath: root.path + "/a/record"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: root.path + "/record"), "\(run)")
    }

    /// `flowrun.yml` counts, and the nearest folder wins over its parents.
    @Test func flowrunYmlInTheNearestFolderIsFound() throws {
        let root = try TemporaryDirectory()
        try Self.makeFolders(root.path + "/sub/deeper")
        try root.write("name: outer\ntasks:\n  a: {run: \"true\"}\n", to: "flowrun.yaml")
        try root.write("name: inner\ntasks:\n  b: {run: \"true\"}\n", to: "sub/flowrun.yml")
        let run = try FlowrunBinary.run(["--dry-run"], in: root.path + "/sub/deeper")
        #expect(run.exitStatus == 0, "\(run)")
        let base = try Self.real(root.path)
        #expect(run.stdout.hasPrefix("Plan for inner (\(base)/sub/flowrun.yml)"), "\(run)")
    }

    @Test(arguments: [[], ["--dry-run"], ["validate"], ["graph"], ["list"]])
    func noFileAnywhereIsExit2NamingTheFolder(arguments: [String]) throws {
        try #require(!FileManager.default.fileExists(atPath: "/flowrun.yaml") && !FileManager.default.fileExists(atPath: "/flowrun.yml"),
                     "a flowrun.yaml at / would be found by every lookup")
        let root = try TemporaryDirectory()
        try Self.makeFolders(root.path + "/x/y")
        let start = try Self.real(root.path + "/x/y")
        var parent = (start as NSString).deletingLastPathComponent
        while parent != "/" {
            try #require(!FileManager.default.fileExists(atPath: parent + "/flowrun.yaml") && !FileManager.default.fileExists(atPath: parent + "/flowrun.yml"),
                         "\(parent) holds a flowrun file")
            parent = (parent as NSString).deletingLastPathComponent
        }
        let run = try FlowrunBinary.run(arguments, in: start)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr == "flowrun: no flowrun.yaml or flowrun.yml in \(start) or any parent folder; name a workflow file\n", "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
    }

    /// A named file runs as before: from the current folder, whatever
    /// `flowrun.yaml` lies beside it or beside the named file.
    @Test func aNamedFileRunsFromTheCurrentFolderAsBefore() throws {
        let root = try TemporaryDirectory()
        try Self.makeFolders(root.path + "/sub")
        try root.write("tasks:\n  broken: {run: \"exit 9\"}\n", to: "flowrun.yaml")
        try root.write("tasks:\n  broken: {run: \"exit 9\"}\n", to: "sub/flowrun.yaml")
        try root.write("tasks:\n  here: {run: pwd -P > here.txt}\n", to: "sub/named.yaml")
        let run = try FlowrunBinary.run(["sub/named.yaml", "--output", "plain"], in: root.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(root.read("here.txt") == (try Self.real(root.path)) + "\n", "\(run)")
        #expect(FileManager.default.fileExists(atPath: root.path + "/.flowrun/runs"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: root.path + "/sub/.flowrun"), "\(run)")
    }

    @Test(arguments: [("grpah", "graph"), ("lsit", "list")])
    func aMisspeltSubcommandWithNoFileStillGetsADidYouMean(typed: String, meant: String) throws {
        let root = try TemporaryDirectory()
        try root.write("tasks:\n  a: {run: \"true\"}\n", to: "flowrun.yaml")
        let run = try FlowrunBinary.run([typed], in: root.path)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr == "flowrun: unknown command `\(typed)`; did you mean `\(meant)`?\n", "\(run)")
        #expect(!FileManager.default.fileExists(atPath: root.path + "/.flowrun"), "nothing ran")
    }
}

private extension TemporaryDirectory {
    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }
}
