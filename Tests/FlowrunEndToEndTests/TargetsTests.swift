import Foundation
import Testing

/// `flowrun [FILE] [TARGET...]`, `flowrun run …`, `default:` and `--only`
/// (SPEC §10, issue 23 item 1): a run runs the named tasks, groups, joins or
/// fan-out members and what they need, nothing else.
@Suite struct TargetsTests {
    /// Every task appends its name to `ran` in the folder it runs in.
    static let projectText = """
        default: [test]
        tasks:
          gen: {run: "echo gen >> ran"}
          build: {run: "echo build >> ran", needs: gen}
          test: {run: "echo test >> ran", needs: build}
          lint: {run: "echo lint >> ran"}
          list: {run: "echo list >> ran"}
        groups:
          shards:
            needs: gen
            foreach: [alpha, beta, gamma]
            task: {name: "shard-${{ item }}", run: "echo shard-$FLOWRUN_ITEM >> ran"}
          plain:
            foreach: [x, y]
            task: {run: "echo plain-$FLOWRUN_ITEM >> ran"}
        joins:
          both:
            wait: [lint, test]
        """

    private static func ran(_ folder: TemporaryDirectory) -> [String] {
        (folder.read("ran") ?? "").split(separator: "\n").map(String.init)
    }

    private static func project() throws -> TemporaryDirectory {
        let folder = try TemporaryDirectory()
        try folder.write(projectText, to: "flowrun.yaml")
        return folder
    }

    @Test func aBareRunRunsTheDefaultAndWhatItNeeds() throws {
        let folder = try Self.project()
        let run = try FlowrunBinary.run(["--output", "plain"], in: folder.path)
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(Self.ran(folder) == ["gen", "build", "test"], "\(run)")
    }

    /// `cd sub && flowrun build`: lookup finds the parent's file, every argument is a target.
    @Test func targetsWorkWithLookupFromASubfolder() throws {
        let folder = try Self.project()
        try FileManager.default.createDirectory(atPath: folder.path + "/sub/deeper", withIntermediateDirectories: true)
        let run = try FlowrunBinary.run(["build", "lint", "--output", "plain"], in: folder.path + "/sub/deeper")
        #expect(run.exitStatus == 0, "\(run)")
        #expect(Self.ran(folder).sorted() == ["build", "gen", "lint"], "\(run)")
    }

    /// A folder named like a target is not a workflow file.
    @Test func aFolderNamedLikeATargetIsATarget() throws {
        let folder = try Self.project()
        try FileManager.default.createDirectory(atPath: folder.path + "/build", withIntermediateDirectories: true)
        let run = try FlowrunBinary.run(["build", "--output", "plain"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(Self.ran(folder) == ["gen", "build"], "\(run)")
    }

    @Test func aNamedFileThenTargets() throws {
        let folder = try TemporaryDirectory()
        let file = try folder.write(Self.projectText, to: "project.yml")
        let run = try FlowrunBinary.run([file, "lint", "--output", "plain", "--log-dir", folder.path + "/record"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(Self.ran(folder) == ["lint"], "\(run)")
    }

    /// `flowrun run list` runs the task `list`; `flowrun list` is still the command.
    @Test func runTakesATargetNamedLikeASubcommand() throws {
        let folder = try Self.project()
        let run = try FlowrunBinary.run(["run", "list", "--output", "plain"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(Self.ran(folder) == ["list"], "\(run)")
        let listed = try FlowrunBinary.run(["list"], in: folder.path)
        #expect(listed.exitStatus == 0, "\(listed)")
        #expect(listed.stdout.contains("shards[*]"), "\(listed)")
        #expect(Self.ran(folder) == ["list"], "flowrun list runs nothing")
    }

    /// `lint` is one edit from `list`: a target of the found workflow runs,
    /// it is not taken for a misspelt command.
    @Test func aTargetCloseToACommandNameRuns() throws {
        let folder = try Self.project()
        let run = try FlowrunBinary.run(["lint", "--output", "plain"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(!run.stderr.contains("unknown command"), "\(run)")
        #expect(Self.ran(folder) == ["lint"], "\(run)")
    }

    @Test(arguments: [
        (["shard-beta"], ["gen", "shard-beta"]),
        (["shards[2]"], ["gen", "shard-gamma"]),
        (["plain[1]"], ["plain-y"]),
        (["shard-alpha", "shard-gamma"], ["gen", "shard-alpha", "shard-gamma"]),
    ])
    func aFanOutMemberIsATargetByItsName(targets: [String], expected: [String]) throws {
        let folder = try Self.project()
        let run = try FlowrunBinary.run(targets + ["--output", "plain"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(Self.ran(folder).sorted() == expected.sorted(), "\(run)")
    }

    /// A group or a join as a target runs all it waits for.
    @Test func aGroupOrJoinTargetRunsWhatItWaitsFor() throws {
        let folder = try Self.project()
        let run = try FlowrunBinary.run(["both", "plain", "--output", "plain"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(Self.ran(folder).sorted() == ["build", "gen", "lint", "plain-x", "plain-y", "test"], "\(run)")
    }

    /// `--only` is the same as naming targets, and mixes with them.
    @Test func onlyIsTheSameAsNamingTargets() throws {
        let folder = try Self.project()
        let named = try FlowrunBinary.run(["lint", "shard-beta", "--dry-run", "--output", "json"], in: folder.path)
        let only = try FlowrunBinary.run(["--only", "lint", "--only", "shard-beta", "--dry-run", "--output", "json"], in: folder.path)
        let mixed = try FlowrunBinary.run(["lint", "--only", "shard-beta", "--dry-run", "--output", "json"], in: folder.path)
        #expect(named.exitStatus == 0, "\(named)")
        func steps(_ run: FlowrunRun) throws -> [String] {
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
            return ((plan["steps"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
        }
        #expect(try steps(named) == steps(only))
        #expect(try steps(named) == steps(mixed))
        #expect(try Set(steps(named)) == ["gen", "lint", "shards[*]", "shards"])
    }

    @Test func theDryRunSaysWhichTargetsAndWhetherTheyAreTheDefault() throws {
        let folder = try Self.project()
        let bare = try FlowrunBinary.run(["--dry-run"], in: folder.path)
        #expect(bare.stdout.contains("targets test (the file's default): running those and what they need"), "\(bare)")
        #expect(!bare.stdout.contains("  lint  [task]"), "\(bare)")
        let named = try FlowrunBinary.run(["shard-beta", "--dry-run"], in: folder.path)
        #expect(named.stdout.contains("targets shard-beta: running those and what they need"), "\(named)")
        #expect(named.stdout.contains("member shard-beta (item beta) only (named as targets)"), "\(named)")
    }

    /// exit 2, did-you-mean over task, group and member names, nothing runs.
    @Test(arguments: [
        ("buidl", "build"), ("shrads", "shards"), ("shard-betta", "shard-beta"), ("bth", "both"),
    ])
    func anUnknownTargetIsExit2WithDidYouMean(typed: String, meant: String) throws {
        let folder = try Self.project()
        let run = try FlowrunBinary.run([typed], in: folder.path)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr == "flowrun: no task, group, join or fan-out member is named '\(typed)' (did you mean '\(meant)'?)\n", "\(run)")
        #expect(folder.read("ran") == nil, "nothing ran")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/.flowrun"), "no record for a bad command line")
    }

    /// What go-task and just users type: `release:patch` (a namespace or a
    /// recipe argument) and `release` for a family of `release-…` tasks.
    /// Before, none of these had a did-you-mean (too far apart to spell).
    @Test(arguments: [
        ("release:patch", "'release:patch' (did you mean 'release'? a target is a name alone: give it values with --var NAME=VALUE)"),
        ("deploy", "'deploy' (did you mean one of 'deploy-prod', 'deploy-staging'?)"),
        ("ship:it", "'ship:it' (did you mean 'ship.it'?)"),
    ])
    func aTargetWrittenAsOtherToolsWriteItGetsADidYouMean(typed: String, message: String) throws {
        let folder = try TemporaryDirectory()
        try folder.write("""
            tasks:
              release: {run: "true"}
              deploy-staging: {run: "true"}
              deploy-prod: {run: "true"}
              ship.it: {run: "true"}
            """, to: "flowrun.yaml")
        let run = try FlowrunBinary.run([typed], in: folder.path)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr == "flowrun: no task, group, join or fan-out member is named \(message)\n", "\(run)")
    }

    /// A `finally` task is not a target (it runs after every run anyway):
    /// naming one says so. Before: "no task … is named 'cleanup'".
    @Test func aFinallyTaskNamedAsATargetSaysWhyItIsNotOne() throws {
        let folder = try TemporaryDirectory()
        try folder.write("""
            tasks:
              build: {run: "echo build >> ran"}
            finally:
              cleanup: {run: "echo cleanup >> ran"}
            """, to: "flowrun.yaml")
        let run = try FlowrunBinary.run(["cleanup"], in: folder.path)
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr == "flowrun: 'cleanup' is a finally task, which runs after every run anyway, whatever its targets; name the tasks, groups, joins or fan-out members to run (all of them: no target)\n", "\(run)")
        #expect(folder.read("ran") == nil, "something ran")
    }

    /// A member's name is made from its item, so it may hold spaces and
    /// `/` (docs/FORMAT.md "Names"): it is a target like any other, shown
    /// as it is, with its own log.
    @Test func aMemberNamedWithSpacesAndSlashesIsATargetWithItsOwnLog() throws {
        let folder = try TemporaryDirectory()
        try folder.write("""
            groups:
              fetch:
                foreach: [x/y, "a b", x_y]
                task: {name: "get ${{ item }}", run: "echo $FLOWRUN_INDEX >> ran; echo item-$FLOWRUN_INDEX"}
            """, to: "flowrun.yaml")
        let run = try FlowrunBinary.run(["get x/y", "--output", "plain"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(folder.read("ran") == "0\n", "\(run)")
        #expect(run.stdout.contains("ok       get x/y"), "\(run)")
        let all = try FlowrunBinary.run(["--output", "plain"], in: folder.path)
        #expect(all.exitStatus == 0, "\(all)")
        let log = try FlowrunBinary.run(["logs", "get a b"], in: folder.path)
        #expect(log.exitStatus == 0 && log.stdout == "item-1\n", "\(log)")
    }

    @Test func anUnknownDefaultIsAValidationErrorAtItsLine() throws {
        let folder = try TemporaryDirectory()
        let file = try folder.write("""
            default: [test, buidl]
            tasks:
              build: {run: "true"}
              test: {run: "true"}
            finally:
              tidy: {run: "true"}
            """, to: "bad.yaml")
        let run = try FlowrunBinary.run(["validate", file])
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.contains("\(file):1:17: error: unknown name 'buidl' in default: no task, group, join or fan-out member has it (did you mean 'build'?)"), "\(run)")
        let finallyDefault = try folder.write("default: [tidy]\ntasks:\n  a: {run: \"true\"}\nfinally:\n  tidy: {run: \"true\"}\n", to: "finally.yaml")
        let second = try FlowrunBinary.run(["validate", finallyDefault])
        #expect(second.exitStatus == 2, "\(second)")
        #expect(second.stderr.contains("\(finallyDefault):1:11: error: 'tidy' is a finally task"), "\(second)")
    }

    /// `flowrun list` marks the default, in text and JSON; a member in
    /// `default:` is shown on its fan-out's line.
    @Test func listMarksTheDefault() throws {
        let folder = try TemporaryDirectory()
        try folder.write("""
            default: [test, shard-b]
            tasks:
              build: {run: "true"}
              test: {run: "true", needs: build}
            groups:
              shards:
                foreach: [a, b]
                task: {name: "shard-${{ item }}", run: "true"}
            """, to: "flowrun.yaml")
        let text = try FlowrunBinary.run(["list"], in: folder.path)
        #expect(text.exitStatus == 0, "\(text)")
        #expect(text.stdout == """
            build      task
            shards[*]  fan-out  default: shard-b · in shards
            test       task     default
            shards     group    members: shards[*]

            """, "\(text)")
        let json = try FlowrunBinary.run(["list", "--output", "json"], in: folder.path)
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]], "\(json)")
        #expect(entries.map { $0["default"] as? Bool } == [nil, nil, true, nil])
        #expect(entries[1]["default_members"] as? [String] == ["shard-b"])
    }

    /// `list`, `graph` and `export` show the whole workflow, whatever `default:` says.
    @Test func otherCommandsShowEverything() throws {
        let folder = try Self.project()
        let graph = try FlowrunBinary.run(["graph"], in: folder.path)
        #expect(graph.exitStatus == 0, "\(graph)")
        #expect(graph.stdout.contains("lint"), "\(graph)")
        let validate = try FlowrunBinary.run(["validate"], in: folder.path)
        #expect(validate.exitStatus == 0, "\(validate)")
    }

    /// Two fan-outs whose members would share a name: refused when the items
    /// are in the file, so a member's name (a target) is its own on every run.
    @Test func twoFanOutsWhoseMemberNamesCollideAreRefused() throws {
        let folder = try TemporaryDirectory()
        let file = try folder.write("""
            groups:
              a:
                foreach: [x, y]
                task: {name: "fetch-${{ item }}", run: "true"}
              b:
                foreach: [y, z]
                task: {name: "fetch-${{ item }}", run: "true"}
            """, to: "collide.yaml")
        let run = try FlowrunBinary.run(["validate", file])
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.contains("\(file):7:18: error: member 0 of group 'b' would be named 'fetch-y', which is already the name of member 1 of group 'a'"), "\(run)")
    }

    /// A member is a target by its name, and runs alone under it.
    @Test func aMemberIsATargetByItsName() throws {
        let folder = try TemporaryDirectory()
        try folder.write("""
            groups:
              fetch:
                foreach: [a, c, b]
                task: {name: "get-${{ item }}", run: "echo $FLOWRUN_INDEX >> ran"}
            """, to: "flowrun.yaml")
        let run = try FlowrunBinary.run(["get-c", "--output", "plain"], in: folder.path)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(folder.read("ran") == "1\n", "\(run)")
        #expect(run.stdout.contains("ok       get-c"), "\(run)")
    }

    /// go-task and just run the task named `default`; flowrun says how to.
    @Test func aTaskNamedDefaultWithoutDefaultWarns() throws {
        let folder = try TemporaryDirectory()
        let file = try folder.write("tasks:\n  default: {run: \"true\"}\n  other: {run: \"true\"}\n", to: "taskfile.yaml")
        let run = try FlowrunBinary.run(["validate", file])
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stderr.contains("\(file):2:3: warning: a task named 'default' is not what a bare run runs (it runs everything); add 'default: [default]' at the top to make it so"), "\(run)")
    }
}

private extension TemporaryDirectory {
    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }
}
