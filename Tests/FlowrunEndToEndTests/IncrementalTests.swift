import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// SPEC §9 incremental tasks, on the real recipe `workflows/c-project`:
    /// a first run compiles everything, an unchanged second run runs
    /// nothing, one edited source recompiles one object and relinks, and a
    /// changed compile command recompiles everything.
    @Suite struct IncrementalTests {
        static let recipe = WorkflowsTests.folder + "/c-project"

        /// The recipe copied into the sandbox with 12 generated units.
        func project() throws -> RunSandbox {
            let sandbox = try RunSandbox()
            _ = try RunSandbox.tool("cc")
            for name in ["flowrun.yaml", "generate.sh", "Makefile"] {
                try FileManager.default.copyItem(atPath: Self.recipe + "/" + name, toPath: sandbox.file(name))
            }
            let generated = try ChildProcess.run(
                executable: "/bin/sh", arguments: ["generate.sh", "12"], environment: ["PATH=/usr/bin:/bin"], directory: sandbox.path,
                stdoutPath: sandbox.file("generate.out"), stderrPath: sandbox.file("generate.err"), timeout: .seconds(30), launcher: nil)
            try #require(generated.exitStatus == 0, "generate.sh failed: \(sandbox.read("generate.err") ?? "")")
            return sandbox
        }

        func build(_ sandbox: RunSandbox, _ extra: [String] = []) throws -> (FlowrunRun, RunRecordFiles) {
            let run = try FlowrunBinary.run(
                [sandbox.file("flowrun.yaml"), "--log-dir", sandbox.logDirectory, "--output", "plain"] + extra, in: sandbox.path,
                environment: sandbox.environment, timeout: .seconds(60))
            let runs = ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.logDirectory)) ?? []).filter(isRunID)
            let records = try runs.map { try RunRecordFiles(directory: sandbox.logDirectory + "/" + $0) }.sorted { first, second in
                (first.events("run_started").first?["time"] as? String ?? "") < (second.events("run_started").first?["time"] as? String ?? "")
            }
            return (run, try #require(records.last))
        }

        static let units = (1...12).map { String(format: "cc-unit%02d", $0) } + ["cc-main"]

        @Test func theCRecipeRebuildsOnlyWhatChanged() throws {
            let sandbox = try project()
            // First run: everything compiles and links.
            let (first, firstRecord) = try build(sandbox)
            #expect(first.exitStatus == 0, "\(first)")
            #expect(Set(firstRecord.names("task_started")) == Set(Self.units + ["list", "link"]), "\(firstRecord.overview)")
            let app = try ChildProcess.run(
                executable: sandbox.file("build/app"), arguments: [], environment: [], directory: sandbox.path,
                stdoutPath: sandbox.file("app.out"), stderrPath: sandbox.file("app.err"), timeout: .seconds(10), launcher: nil)
            #expect(app.exitStatus == 0)
            let before = sandbox.read("app.out")
            #expect(before?.isEmpty == false)

            // Unchanged: nothing runs, every task is up to date.
            let (second, secondRecord) = try build(sandbox)
            #expect(second.exitStatus == 0, "\(second)")
            #expect(secondRecord.names("task_started").isEmpty, "\(secondRecord.overview)")
            let finished = secondRecord.events("task_finished")
            #expect(finished.count == Self.units.count + 2)
            #expect(finished.allSatisfy { $0["reused"] as? String == "up_to_date" && $0["status"] as? String == "succeeded" }, "\(secondRecord.overview)")
            #expect(second.stdout.contains("(\(Self.units.count + 2) up to date)"), "\(second)")
            let problems = try RunEndToEndParallel.EventsSchemaTests.validate(secondRecord.eventLines.filter { !$0.isEmpty })
            #expect(problems.isEmpty, "\(problems)")
            // The listing's stash came back: the fan-out has its 13 members.
            #expect(secondRecord.stdout("list")?.split(separator: "\n").count == 13)

            // One source edited (its code, not a comment): one compile, one link.
            let unit = sandbox.file("src/unit05.c")
            let text = try String(contentsOfFile: unit, encoding: .utf8)
            try text.replacingOccurrences(of: "return total + 5;", with: "return total + 500;").write(toFile: unit, atomically: true, encoding: .utf8)
            let (third, thirdRecord) = try build(sandbox)
            #expect(third.exitStatus == 0, "\(third)")
            #expect(thirdRecord.names("task_started").sorted() == ["cc-unit05", "link"], "\(thirdRecord.overview)")

            // A timestamp alone changes nothing (content hashes, not mtimes).
            #expect(utimes(unit, nil) == 0)
            let (_, touchedRecord) = try build(sandbox)
            #expect(touchedRecord.names("task_started").isEmpty, "\(touchedRecord.overview)")

            // The compile command changed: every unit compiles again, and the link.
            let workflow = sandbox.file("flowrun.yaml")
            let yaml = try String(contentsOfFile: workflow, encoding: .utf8)
            try yaml.replacingOccurrences(of: "CFLAGS: -O2 -Wall -Iinclude", with: "CFLAGS: -O1 -Wall -Iinclude")
                .write(toFile: workflow, atomically: true, encoding: .utf8)
            let (fourth, fourthRecord) = try build(sandbox)
            #expect(fourth.exitStatus == 0, "\(fourth)")
            #expect(Set(fourthRecord.names("task_started")) == Set(Self.units + ["link"]), "\(fourthRecord.overview)")

            // --force runs everything; the dry run says what is up to date.
            let (forced, forcedRecord) = try build(sandbox, ["--force"])
            #expect(forced.exitStatus == 0, "\(forced)")
            #expect(Set(forcedRecord.names("task_started")) == Set(Self.units + ["list", "link"]))
            let dry = try FlowrunBinary.run([sandbox.file("flowrun.yaml"), "--dry-run"], in: sandbox.path, environment: sandbox.environment)
            #expect(dry.stdout.contains("  list: up to date"), "\(dry)")
            #expect(dry.stdout.contains("  link: up to date"), "\(dry)")
        }

        /// A dry run checks a fan-out's members one by one, but not ten
        /// million of them: the first 1,000, then a count. Before, the range
        /// was made into a list of every item and every line.
        @Test func aDryRunOfAHugeIncrementalRangeChecksTheFirstThousandAndCountsTheRest() throws {
            let sandbox = try RunSandbox()
            try "x".write(toFile: sandbox.file("in.txt"), atomically: true, encoding: .utf8)
            try """
                tasks: {}
                groups:
                  work:
                    foreach: { range: [1, 10000000] }
                    task:
                      sources: ["in.txt"]
                      run: "true"

                """.write(toFile: sandbox.file("flowrun.yaml"), atomically: true, encoding: .utf8)
            let dry = try FlowrunBinary.run(
                [sandbox.file("flowrun.yaml"), "--dry-run"], in: sandbox.path, environment: sandbox.environment, timeout: .seconds(60))
            #expect(dry.exitStatus == 0, "\(dry)")
            // The plan's own line for the fan-out is `  work[*]  [fan-out, …]`.
            let members = dry.stdout.split(separator: "\n").filter { $0.hasPrefix("  work[") && !$0.hasPrefix("  work[*]") }
            #expect(members.count == 1_000, "\(members.count) members listed")
            #expect(members.first == "  work[0]: would run (no successful run recorded)", "\(members.first ?? "")")
            #expect(dry.stdout.contains("  work: 9999000 more members, not checked (a dry run checks the first 1000)"), "\(dry.stdout.suffix(300))")
        }

        @Test func stateIsPrivateAndWrittenOnlyAfterSuccess() throws {
            let sandbox = try RunSandbox()
            let failing = """
                tasks:
                  make:
                    sources: ["in.txt"]
                    generates: ["out.txt"]
                    run: |
                      echo ran >> "$SANDBOX/make.count"
                      cp in.txt out.txt
                      test -f "$SANDBOX/allow"

                """
            try "one".write(toFile: sandbox.file("in.txt"), atomically: true, encoding: .utf8)
            let failed = try sandbox.run(failing)
            #expect(failed.exitStatus == 1, "\(failed)")
            let stateFolder = sandbox.file(".flowrun/state")
            // The state folder holds only the (empty) folder of snapshots.
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: stateFolder)) ?? []).filter { $0 != "snapshots" }.isEmpty, "a failed task left state")
            let again = try sandbox.run(failing)
            #expect(again.exitStatus == 1)
            #expect(sandbox.lines("make.count").count == 2, "a failed task was taken as up to date")

            try "".write(toFile: sandbox.file("allow"), atomically: true, encoding: .utf8)
            #expect(try sandbox.run(failing).exitStatus == 0)
            #expect(try sandbox.run(failing).exitStatus == 0)
            #expect(sandbox.lines("make.count").count == 3, "the succeeded task ran again though nothing changed")
            var info = stat()
            #expect(stat(stateFolder, &info) == 0 && info.st_mode & 0o777 == 0o700)
            #expect(stat(stateFolder + "/snapshots", &info) == 0 && info.st_mode & 0o777 == 0o700)
            let files = try FileManager.default.contentsOfDirectory(atPath: stateFolder).filter { $0 != "snapshots" }
            #expect(files.count == 1 && files[0].hasSuffix(".json"), "\(files)")
            #expect(stat(stateFolder + "/" + files[0], &info) == 0 && info.st_mode & 0o777 == 0o600)
            // A generated file removed: the task runs again.
            try FileManager.default.removeItem(atPath: sandbox.file("out.txt"))
            #expect(try sandbox.run(failing).exitStatus == 0)
            #expect(sandbox.lines("make.count").count == 4)
        }

        /// Two runs at once write the same tasks' state: each file is whole
        /// (renamed into place), and a third run finds everything up to date.
        @Test func twoOverlappingRunsLeaveUsableState() throws {
            let sandbox = try RunSandbox()
            for index in 0..<8 { try "input \(index)".write(toFile: sandbox.file("in\(index).txt"), atomically: true, encoding: .utf8) }
            let workflow = try sandbox.write(workflow: """
                max_parallel: 8
                groups:
                  copy:
                    foreach: {range: [0, 7]}
                    task:
                      sources: ["in${{ item }}.txt"]
                      generates: ["out${{ item }}.txt"]
                      run: |
                        echo started >> "$SANDBOX/starts"
                        while [ ! -f "$SANDBOX/go" ]; do sleep 0.02; done
                        # Both runs write this file: a rename, so neither cp meets the other's.
                        cp in$FLOWRUN_ITEM.txt out$FLOWRUN_ITEM.txt.$$ && mv out$FLOWRUN_ITEM.txt.$$ out$FLOWRUN_ITEM.txt

                """)
            let arguments = [workflow, "--log-dir", sandbox.logDirectory, "--output", "plain"]
            let first = try LiveFlowrun(arguments, environment: sandbox.environment, directory: sandbox.path, hardTimeout: .seconds(60))
            let second = try LiveFlowrun(arguments, environment: sandbox.environment, directory: sandbox.path, hardTimeout: .seconds(60))
            // Both runs are inside their tasks before either writes any state.
            try #require(sandbox.waitFor("starts", lines: 16), "the two runs never both started their tasks")
            try "".write(toFile: sandbox.file("go"), atomically: true, encoding: .utf8)
            let firstOutcome = first.finish(), secondOutcome = second.finish()
            #expect(firstOutcome.exitStatus == 0, "\(firstOutcome)")
            #expect(secondOutcome.exitStatus == 0, "\(secondOutcome)")
            let files = try FileManager.default.contentsOfDirectory(atPath: sandbox.file(".flowrun/state")).filter { $0 != "snapshots" }
            #expect(files.count == 8 && files.allSatisfy { $0.hasSuffix(".json") }, "\(files)")
            let third = try FlowrunBinary.run(arguments, in: sandbox.path, environment: sandbox.environment)
            #expect(third.exitStatus == 0, "\(third)")
            #expect(sandbox.lines("starts").count == 16, "a task ran again after two overlapping runs\n\(third)")
        }

        /// `**` reaches every folder level but hidden ones; a folder named
        /// as a source changes with its list of names.
        @Test func doubleStarGlobsAndFolderSources() throws {
            let sandbox = try RunSandbox()
            let fileManager = FileManager.default
            for folder in ["src/a/b", "src/.hidden", "list"] { try fileManager.createDirectory(atPath: sandbox.file(folder), withIntermediateDirectories: true) }
            for file in ["src/top.txt", "src/a/b/deep.txt", "src/.hidden/x.txt", "list/one"] {
                try "v1".write(toFile: sandbox.file(file), atomically: true, encoding: .utf8)
            }
            let workflow = """
                tasks:
                  deep:
                    sources: ["src/**/*.txt"]
                    run: echo ran >> "$SANDBOX/deep.count"
                  listing:
                    sources: [list]
                    run: echo ran >> "$SANDBOX/listing.count"

                """
            #expect(try sandbox.run(workflow).exitStatus == 0)
            #expect(try sandbox.run(workflow).exitStatus == 0)
            #expect(sandbox.lines("deep.count").count == 1 && sandbox.lines("listing.count").count == 1)
            // A hidden folder is not swept in; an edit inside the listed folder is not a new name.
            try "v2".write(toFile: sandbox.file("src/.hidden/x.txt"), atomically: true, encoding: .utf8)
            try "v2".write(toFile: sandbox.file("list/one"), atomically: true, encoding: .utf8)
            #expect(try sandbox.run(workflow).exitStatus == 0)
            #expect(sandbox.lines("deep.count").count == 1 && sandbox.lines("listing.count").count == 1)
            // Two levels down counts; a new name in the folder counts.
            try "v2".write(toFile: sandbox.file("src/a/b/deep.txt"), atomically: true, encoding: .utf8)
            try "v1".write(toFile: sandbox.file("list/two"), atomically: true, encoding: .utf8)
            #expect(try sandbox.run(workflow).exitStatus == 0)
            #expect(sandbox.lines("deep.count").count == 2 && sandbox.lines("listing.count").count == 2)
        }

        /// Two static calls of one template, whose `sources:`/`generates:`
        /// hold `${{ params.name }}` inside other text: each call checks its
        /// own files. Before, the second call reused the first call's split
        /// of the key (same place in the file): `cc-b` hashed `src/a.c`.
        /// (`dir` comes from the default, so both calls' texts also share
        /// the default's place.)
        @Test func staticTemplateCallsEachCheckTheirOwnSources() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: sandbox.file("build"), withIntermediateDirectories: true)
            for name in ["a", "b"] { try "\(name) 1".write(toFile: sandbox.file("src/\(name).c"), atomically: true, encoding: .utf8) }
            let workflow = """
                templates:
                  cc:
                    params: { dir: src, name: ~ }
                    sources: ["${{ params.dir }}/${{ params.name }}.c"]
                    generates: ["build/${{ params.name }}.o"]
                    run: |
                      echo ran >> "$SANDBOX/${{ params.name }}.count"
                      cp src/${{ params.name }}.c build/${{ params.name }}.o
                tasks:
                  cc-a: { uses: cc, with: { name: a } }
                  cc-b: { uses: cc, with: { name: b } }

                """
            #expect(try sandbox.run(workflow).exitStatus == 0)
            #expect(sandbox.lines("a.count").count == 1 && sandbox.lines("b.count").count == 1)

            try "b 2".write(toFile: sandbox.file("src/b.c"), atomically: true, encoding: .utf8)
            let dry = try FlowrunBinary.run([sandbox.file("workflow.yaml"), "--dry-run"], in: sandbox.path, environment: sandbox.environment)
            #expect(dry.stdout.contains("  cc-a: up to date"), "\(dry)")
            #expect(dry.stdout.contains("  cc-b: would run (sources changed)"), "\(dry)")
            #expect(try sandbox.run(workflow).exitStatus == 0)
            #expect(sandbox.lines("a.count").count == 1, "cc-a ran after src/b.c changed")
            #expect(sandbox.lines("b.count").count == 2, "cc-b stayed up to date after src/b.c changed")
            #expect(sandbox.read("build/b.o") == "b 2")

            try "a 2".write(toFile: sandbox.file("src/a.c"), atomically: true, encoding: .utf8)
            #expect(try sandbox.run(workflow).exitStatus == 0)
            #expect(sandbox.lines("a.count").count == 2, "cc-a stayed up to date after src/a.c changed")
            #expect(sandbox.lines("b.count").count == 2, "cc-b ran after src/a.c changed")
            #expect(sandbox.read("build/a.o") == "a 2")
        }

        @Test func aBadGlobIsAnErrorAtItsColumn() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: """
                tasks:
                  a:
                    sources: ["src/[ab.c", "ok/*.c"]
                    generates: ["build/**x/y"]
                    run: "true"

                """)
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("\(file):3:20: error: bad glob in sources: '[' is not closed: add ']' (or write '\\[' for the character)"), "\(run)")
            #expect(run.stderr.contains("\(file):4:24: error: bad glob in generates: '**' must be a whole path segment, as in 'src/**/*.c'"), "\(run)")
        }
    }
}
