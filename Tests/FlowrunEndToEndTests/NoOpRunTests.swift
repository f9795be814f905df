import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// The no-op run (issue 37): every task up to date, nothing started. Its
    /// record is `events.jsonl` and `summary.json` in a folder the last
    /// pruning kept (`.flowrun-spare`), so that in a steady state of
    /// `--keep N` records a no-op run makes no folder and removes none —
    /// on a filesystem mounted with `discard`, each `rmdir` was a
    /// synchronous discard. It still counts as a run: listed, `latest`,
    /// every task `up_to_date`. It forks no process: the supervisor split is
    /// made only once the plan shows that a task must start (and the
    /// supervisor's watch and its sentinel with the first attempt). A
    /// task that is not up to date still gets its `logs/` and `outputs/`,
    /// and runs under the supervisor.
    @Suite struct NoOpRunTests {
        static let workflow = """
            tasks:
              a: { sources: [a.c], generates: [a.o], run: "cp a.c a.o" }
              b: { sources: [b.c], generates: [b.o], run: "cp b.c b.o" }
              link:
                needs: [a, b]
                sources: [a.o, b.o]
                generates: [app]
                run: 'cat a.o b.o > app; echo "size=$(wc -c < app)" >> "$FLOWRUN_OUTPUT"'
            """

        func project() throws -> (RunSandbox, String) {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.workflow)
            for name in ["a.c", "b.c"] { try "int \(name.first!);\n".write(toFile: sandbox.file(name), atomically: false, encoding: .utf8) }
            return (sandbox, workflow)
        }

        /// One run of the workflow with `--keep 2` under `strace -f -y`: its
        /// exit status and the system calls that made or removed a folder,
        /// or wrote into the record (`-y` names each descriptor's file).
        func tracedRun(_ sandbox: RunSandbox, _ workflow: String, sourceLocation: SourceLocation = #_sourceLocation) throws
            -> (exitStatus: Int32?, folderCalls: [String], recordWrites: [String], processes: [String], sleeps: [String], threads: [String]) {
            let strace = try RunSandbox.tool("strace")
            let trace = sandbox.file("trace-\(UUID().uuidString)")
            let outcome = try ChildProcess.run(
                executable: strace,
                arguments: ["-f", "-qq", "-y", "-e", "trace=mkdir,mkdirat,rmdir,unlinkat,write,writev,pwrite64,clone,clone3,fork,vfork,nanosleep,clock_nanosleep", "-o", trace, try FlowrunBinary.path()]
                    + sandbox.arguments(workflow, ["--keep", "2"]),
                environment: sandbox.environment.map { "\($0.key)=\($0.value)" } + ["PATH=/usr/bin:/bin"], directory: sandbox.path,
                stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"), timeout: .seconds(60), launcher: nil)
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stdout") ?? "") \(sandbox.read("stderr") ?? "")", sourceLocation: sourceLocation)
            let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            // Made or removed: a mkdir that returned 0, an rmdir or an unlinkat of a folder.
            let folderCalls = lines.filter {
                ($0.contains("mkdir") && $0.hasSuffix(" = 0")) || $0.contains("rmdir(") || $0.contains("AT_REMOVEDIR")
            }
            let recordWrites = lines.filter { $0.contains("write") && $0.contains(sandbox.logDirectory) }
            // A process made (a thread is a clone with CLONE_THREAD).
            let processes = lines.filter { ($0.contains("clone") || $0.contains("fork(")) && !$0.contains("CLONE_THREAD") && !$0.contains("resumed") }
            let sleeps = lines.filter { $0.contains("nanosleep(") }
            let threads = lines.filter { $0.contains("clone") && $0.contains("CLONE_THREAD") && !$0.contains("resumed") }
            return (outcome.exitStatus, folderCalls, recordWrites, processes, sleeps, threads)
        }

        @Test func aNoOpRunMakesNoFolderAndRemovesNoneYetIsARunWithEveryTaskUpToDate() throws {
            let (sandbox, workflow) = try project()
            // The first run builds; two no-op runs bring the record to its steady state (two kept, a spare).
            for round in 1...3 {
                let run = try FlowrunBinary.run(sandbox.arguments(workflow, ["--keep", "2"]), in: sandbox.path, environment: sandbox.environment)
                #expect(run.exitStatus == 0, "round \(round): \(run)")
            }
            #expect(FileManager.default.fileExists(atPath: sandbox.logDirectory + "/.flowrun-spare"), "no spare kept by the pruning")

            let traced = try tracedRun(sandbox, workflow)
            #expect(traced.exitStatus == 0)
            #expect(traced.folderCalls.isEmpty, "a no-op run made or removed folders:\n\(traced.folderCalls.joined(separator: "\n"))")
            // events.jsonl in one write, summary.json in one: the record is two small writes.
            #expect(traced.recordWrites.count <= 2, "writes into the record:\n\(traced.recordWrites.joined(separator: "\n"))")
            // No supervisor's fork of the engine, no sentinel, no task: one process.
            #expect(traced.processes.isEmpty, "processes made:\n\(traced.processes.joined(separator: "\n"))")
            // Nothing sleeps: the console's last lines are waited for, not polled (a 2 ms poll was a third of a no-op).
            #expect(traced.sleeps.isEmpty, "sleeps:\n\(traced.sleeps.joined(separator: "\n"))")
            // One thread, the console's (stdout is a file here; it must not block the run): the
            // event loop and the engine's turns run on the main thread, and the lines are handed
            // over at the end, with no timer (a Dispatch thread). There were four.
            #expect(traced.threads.count <= 1, "threads made:\n\(traced.threads.joined(separator: "\n"))")

            // Still a run: two kept, the newest is `latest`, listed, every task up to date.
            let runs = runFolders(in: sandbox.logDirectory)
            #expect(runs.count == 2, "\(runs)")
            // The newest: `latest` (two ids of one second sort by their random part).
            let newest = try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.logDirectory + "/latest")
            #expect(runs.contains(newest), "\(runs)")
            let folder = sandbox.logDirectory + "/" + newest
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder)) == ["events.jsonl", "summary.json"])
            // Pruning reads a record's start time from this prefix without a JSON parse (`RunHistory.startTime`).
            let events = (try? String(contentsOfFile: folder + "/events.jsonl", encoding: .utf8)) ?? ""
            #expect(events.hasPrefix(#"{"event":"run_started","time":""#), "\(events.prefix(80))")
            var info = stat()
            #expect(stat(folder, &info) == 0 && info.st_mode & 0o7777 == 0o700 && info.st_uid == geteuid(), "the run folder is private")
            let record = try RunRecordFiles(directory: folder)
            #expect(record.statuses == ["a": "succeeded", "b": "succeeded", "link": "succeeded"], "\(record.overview)")
            #expect(Set(record.events("task_finished").compactMap { $0["reused"] as? String }) == ["up_to_date"], "\(record.overview)")
            #expect(record.outputs("link") == ["size": "14"], "the up-to-date task's outputs come from its last run")
            let listed = try FlowrunBinary.run(["runs", "--log-dir", sandbox.logDirectory], in: sandbox.path)
            #expect(listed.exitStatus == 0 && listed.stdout.contains(newest), "\(listed)")
            let shown = try FlowrunBinary.run(["show", newest, "--log-dir", sandbox.logDirectory], in: sandbox.path)
            #expect(shown.exitStatus == 0 && shown.stdout.contains("succeeded, exit 0: 3 succeeded"), "\(shown)")
            // A log asked of a task that ran nothing: said so, as before (no logs/ folder to read).
            let logs = try FlowrunBinary.run(["logs", newest, "a", "--log-dir", sandbox.logDirectory], in: sandbox.path)
            #expect(logs.exitStatus == 0 && logs.stdout.isEmpty && logs.stderr.contains("'a' did not run (succeeded)"), "\(logs)")
        }

        /// A no-op run with more roots than one turn of the engine takes
        /// (256): the later turns run on a Dispatch thread, and the run
        /// still ends, every task up to date and every line printed.
        @Test func aNoOpRunOfManyRootsEndsWithEveryLine() throws {
            let sandbox = try RunSandbox()
            var text = "tasks:\n"
            for index in 0..<300 { text += "  t\(index): { sources: [s.c], generates: [o\(index)], run: \"cp s.c o\(index)\" }\n" }
            let workflow = try sandbox.write(workflow: text)
            try "int s;\n".write(toFile: sandbox.file("s.c"), atomically: false, encoding: .utf8)
            let first = try FlowrunBinary.run(sandbox.arguments(workflow, ["--output", "plain"]), in: sandbox.path, environment: sandbox.environment)
            #expect(first.exitStatus == 0, "\(first)")
            let again = try FlowrunBinary.run(
                sandbox.arguments(workflow, ["--output", "plain"]), in: sandbox.path, environment: sandbox.environment, timeout: .seconds(30))
            #expect(again.exitStatus == 0, "\(again)")
            #expect(again.stdout.split(separator: "\n").filter { $0.contains(" uptodate ") }.count == 300, "\(again.stdout.suffix(400))")
            #expect(again.stdout.contains("300 succeeded (300 up to date)"), "\(again.stdout.suffix(400))")
            let json = try FlowrunBinary.run(sandbox.arguments(workflow, ["--output", "json"]), in: sandbox.path, environment: sandbox.environment)
            #expect(json.exitStatus == 0 && json.stdout.split(separator: "\n").count == 302, "\(json.stdout.suffix(400))")
        }

        /// A `finally` task that is up to date settles as it starts, and that
        /// ended the run from inside the call that started it: the run ended
        /// twice (two `run finished` lines on the console, two `run_finished`
        /// events in `events.jsonl`), in a no-op run and in a run whose main
        /// phase ran a task alike.
        @Test func anUpToDateFinallyTaskEndsTheRunOnce() throws {
            let sandbox = try RunSandbox()
            try "int s;\n".write(toFile: sandbox.file("s.c"), atomically: false, encoding: .utf8)
            let workflows = [
                "tasks:\n  a: { sources: [s.c], run: echo a }\nfinally:\n  fin: { sources: [s.c], run: echo fin }\n",
                "tasks:\n  a: { run: echo a }\nfinally:\n  fin: { sources: [s.c], run: echo fin }\n",
            ]
            for (number, text) in workflows.enumerated() {
                let workflow = try sandbox.write(workflow: text, to: "w\(number).yaml")
                for round in 1...2 {
                    for output in ["plain", "json"] {
                        let run = try FlowrunBinary.run(sandbox.arguments(workflow, [], output: output), in: sandbox.path, environment: sandbox.environment)
                        #expect(run.exitStatus == 0, "\(run)")
                        let finishedLines = run.stdout.split(separator: "\n").filter { $0.contains(output == "json" ? "\"event\":\"run_finished\"" : " run      finished ") }
                        #expect(finishedLines.count == 1, "workflow \(number), round \(round), \(output):\n\(run.stdout)")
                        let newest = try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.logDirectory + "/latest")
                        let events = (try? String(contentsOfFile: sandbox.logDirectory + "/" + newest + "/events.jsonl", encoding: .utf8)) ?? ""
                        #expect(events.split(separator: "\n").filter { $0.contains("\"event\":\"run_finished\"") }.count == 1,
                                "workflow \(number), round \(round), \(output): events.jsonl:\n\(events)")
                    }
                }
            }
        }

        /// After no-op runs, an edited source runs its task and the link
        /// again, with `logs/` and `outputs/` made for them: the link's
        /// `$FLOWRUN_OUTPUT` lands, its log is readable.
        @Test func aTaskThatIsNotUpToDateGetsItsLogsAndOutputs() throws {
            let (sandbox, workflow) = try project()
            for _ in 1...3 { _ = try FlowrunBinary.run(sandbox.arguments(workflow, ["--keep", "2"]), in: sandbox.path, environment: sandbox.environment) }
            try "int a; int edited;\n".write(toFile: sandbox.file("a.c"), atomically: false, encoding: .utf8)
            let run = try FlowrunBinary.run(sandbox.arguments(workflow, ["--keep", "2"]), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            let newest = try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.logDirectory + "/latest")
            let record = try RunRecordFiles(directory: sandbox.logDirectory + "/" + newest)
            #expect(record.names("task_started").sorted() == ["a", "link"], "\(record.overview)")
            #expect(record.outputs("link") == ["size": "26"], "\(record.overview)")
            #expect(FileManager.default.fileExists(atPath: record.directory + "/outputs"))
            #expect(FileManager.default.fileExists(atPath: record.directory + "/logs"))
            #expect(sandbox.read("app") == "int a; int edited;\nint b;\n")
        }
    
        /// A member found up to date is recorded with the identity the check
        /// before the run made for it (not made again): the one its run had.
        @Test func anUpToDateMemberIsRecordedWithTheIdentityItsRunHad() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                groups:
                  compile:
                    foreach: [a, b, c]
                    task:
                      name: cc-${{ item }}
                      sources: ["${{ item }}.c"]
                      generates: ["${{ item }}.o"]
                      run: 'cp ${{ item }}.c ${{ item }}.o'
                """)
            for name in ["a", "b", "c"] { try "\(name)\n".write(toFile: sandbox.file("\(name).c"), atomically: false, encoding: .utf8) }
            func identities() throws -> [String: String] {
                let newest = try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.logDirectory + "/latest")
                let data = try Data(contentsOf: URL(fileURLWithPath: sandbox.logDirectory + "/" + newest + "/summary.json"))
                let tasks = try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["tasks"] as? [[String: Any]])
                var result: [String: String] = [:]
                for task in tasks {
                    let parts = (task["identity_parts"] as? [String: String] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                    result[task["name"] as? String ?? ""] = "\(task["identity"] as? String ?? "none") \(parts.joined(separator: ","))"
                }
                return result
            }
            let built = try FlowrunBinary.run(sandbox.arguments(workflow, ["--output", "plain"]), in: sandbox.path, environment: sandbox.environment)
            #expect(built.exitStatus == 0 && !built.stdout.contains("uptodate"), "\(built)")
            let ran = try identities()
            let again = try FlowrunBinary.run(sandbox.arguments(workflow, ["--output", "plain"]), in: sandbox.path, environment: sandbox.environment)
            #expect(again.exitStatus == 0 && again.stdout.contains("3 succeeded (3 up to date)"), "\(again)")
            let checked = try identities()
            #expect(ran.count == 3 && ran.values.allSatisfy { !$0.hasPrefix("none") }, "\(ran)")
            #expect(checked == ran)
        }

        /// c-project's shape: a fan-out over an up-to-date listing's stdout,
        /// one member per line, then a link. Its members are known from the
        /// stdout the listing's record kept, so a no-op run of it is known
        /// before it starts, and makes no process; the dry run shows each
        /// member. A new file makes the listing run, and the run is supervised.
        @Test func aNoOpRunOverAFanOutOfAnUpToDateListMakesNoProcess() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  list: { sources: [src], run: "cd src && ls" }
                  link:
                    needs: [compile]
                    sources: ["out/*"]
                    generates: [app]
                    run: 'cat out/* > app'
                groups:
                  compile:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      name: cc-${{ item }}
                      sources: ["src/${{ item }}"]
                      generates: ["out/${{ item }}"]
                      run: 'mkdir -p out && cp src/${{ item }} out/${{ item }}'
                """)
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            for name in ["a", "b", "c"] { try "\(name)\n".write(toFile: sandbox.file("src/\(name)"), atomically: false, encoding: .utf8) }
            for round in 1...3 {
                let run = try FlowrunBinary.run(sandbox.arguments(workflow, ["--keep", "2"]), in: sandbox.path, environment: sandbox.environment)
                #expect(run.exitStatus == 0, "round \(round): \(run)")
            }
            let dry = try FlowrunBinary.run(sandbox.arguments(workflow, ["--dry-run"]), in: sandbox.path, environment: sandbox.environment)
            for name in ["list", "cc-a", "cc-b", "cc-c", "link"] {
                #expect(dry.stdout.contains("  \(name): up to date\n"), "\(name) not shown up to date:\n\(dry.stdout)")
            }
            let traced = try tracedRun(sandbox, workflow)
            #expect(traced.processes.isEmpty, "processes made:\n\(traced.processes.joined(separator: "\n"))")
            let newest = try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.logDirectory + "/latest")
            let record = try RunRecordFiles(directory: sandbox.logDirectory + "/" + newest)
            #expect(Set(record.names("task_finished")) == ["list", "cc-a", "cc-b", "cc-c", "link"], "\(record.overview)")
            #expect(Set(record.events("task_finished").compactMap { $0["reused"] as? String }) == ["up_to_date"], "\(record.overview)")

            // A file added: the listing runs again, and with it the new member and the link, supervised.
            try "d\n".write(toFile: sandbox.file("src/d"), atomically: false, encoding: .utf8)
            let added = try tracedRun(sandbox, workflow)
            #expect(added.exitStatus == 0)
            #expect(!added.processes.isEmpty, "a run that starts tasks made no process")
            #expect(sandbox.read("app") == "a\nb\nc\nd\n")
        }

        /// A service is started again whatever its sources say (its
        /// dependents need it running): a run whose tasks are all up to date
        /// but one of them a service still starts a process, under the
        /// supervisor (the debug binary asserts that no task starts in a run
        /// that skipped it).
        @Test func aRunWithAServiceUpToDateIsStillSupervised() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  s: { service: true, sources: [a.txt], run: "sleep 30" }
                  t: { needs: [s], sources: [a.txt], run: "true" }
                """)
            try "x\n".write(toFile: sandbox.file("a.txt"), atomically: false, encoding: .utf8)
            for round in 1...2 {
                let run = try FlowrunBinary.run(sandbox.arguments(workflow, ["--keep", "2"]), in: sandbox.path, environment: sandbox.environment)
                #expect(run.exitStatus == 0, "round \(round): \(run)")
            }
            let traced = try tracedRun(sandbox, workflow)
            #expect(traced.exitStatus == 0)
            // The supervisor's fork of the engine, the sentinel, the service.
            #expect(traced.processes.count >= 2, "processes made:\n\(traced.processes.joined(separator: "\n"))")
        }

        /// A run where one task is not up to date splits into supervisor and
        /// engine before it starts (a `kill -9` of flowrun still stops it):
        /// the task's parent, the engine, is the child of a `flowrun`, not of
        /// this test. The same workflow's no-op run made no process at all
        /// (above), so what decides is the check, not the command line.
        @Test func aRunThatStartsATaskIsSupervised() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  a: { sources: [a.c], generates: [a.o], run: "cp a.c a.o" }
                  b:
                    sources: [b.c]
                    run: 'engine=$PPID; set -- $(cat /proc/$engine/stat); cat /proc/$4/comm > "$SANDBOX/engine-parent"'
                """)
            for name in ["a.c", "b.c"] { try "int \(name.first!);\n".write(toFile: sandbox.file(name), atomically: false, encoding: .utf8) }
            let first = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment)
            #expect(first.exitStatus == 0, "\(first)")
            #expect(sandbox.read("engine-parent") == "flowrun\n", "the first run's engine is not the supervisor's child")
            try FileManager.default.removeItem(atPath: sandbox.file("engine-parent"))
            // `a` up to date, `b`'s source edited: the run starts `b`, supervised.
            try "int b; int edited;\n".write(toFile: sandbox.file("b.c"), atomically: false, encoding: .utf8)
            let second = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment)
            #expect(second.exitStatus == 0, "\(second)")
            #expect(sandbox.read("engine-parent") == "flowrun\n", "a run that starts a task after an up-to-date one is not supervised")
        }

        /// A fan-out member whose `name:` reads another task's stdout is
        /// named by the run from that task's kept stdout; the check before
        /// the split filled the value in as '' and so checked another member
        /// (`m--0`, up to date from an older run) than the one the engine
        /// made (`m-X-0`, never run). The run skipped the supervisor, and the
        /// engine, finding no decision for `m-X-0`, started it unsupervised
        /// (a `kill -9` of flowrun would have left it running). Now such a
        /// member is decided when it runs, and the run is supervised.
        @Test func aMemberNamedFromAnotherTasksStdoutIsNotStartedUnsupervised() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  A: { sources: [a.txt], run: "cat a.txt" }
                groups:
                  g:
                    needs: [A]
                    foreach: [x]
                    task:
                      name: "m-${{ tasks.A.stdout }}-${{ index }}"
                      sources: [m.txt]
                      run: 'engine=$PPID; set -- $(cat /proc/$engine/stat); cat /proc/$4/comm > "$SANDBOX/engine-parent"'
                """)
            try "".write(toFile: sandbox.file("a.txt"), atomically: false, encoding: .utf8)
            try "m\n".write(toFile: sandbox.file("m.txt"), atomically: false, encoding: .utf8)
            // A prints nothing: the member is `m--0`, and its state is written under that name.
            let first = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment)
            #expect(first.exitStatus == 0 && sandbox.read("engine-parent") == "flowrun\n", "\(first)")
            // A alone runs again and now prints X: its kept stdout names the member `m-X-0`, never run.
            try "X".write(toFile: sandbox.file("a.txt"), atomically: false, encoding: .utf8)
            let only = try FlowrunBinary.run(sandbox.arguments(workflow, ["A"]), in: sandbox.path, environment: sandbox.environment)
            #expect(only.exitStatus == 0, "\(only)")
            try FileManager.default.removeItem(atPath: sandbox.file("engine-parent"))
            let dry = try FlowrunBinary.run(sandbox.arguments(workflow, ["--dry-run"]), in: sandbox.path, environment: sandbox.environment)
            #expect(!dry.stdout.contains("m--0: up to date"), "the dry run checked a member the run does not make:\n\(dry.stdout)")
            let run = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("m-X-0"), "\(run)")
            #expect(sandbox.read("engine-parent") == "flowrun\n", "the member started with no supervisor: its engine's parent is \(sandbox.read("engine-parent") ?? "none")")
        }

        /// A task whose stdout holds a secret is kept in the state masked
        /// (`***`); settled up to date from it, a fan-out over its stdout
        /// handed the member `***` as its item, and ran it again every time
        /// with it. Its state is not kept now: the listing runs every time,
        /// and each member gets the real item (and stays up to date).
        @Test func aFanOutOverAStdoutHoldingASecretNeverGetsTheMaskAsAnItem() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                secrets: [TOKEN]
                tasks:
                  list: { sources: [l.txt], run: "cat l.txt" }
                groups:
                  g:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      sources: [s.txt]
                      run: 'echo "item=${{ item }}" >> "$SANDBOX/items.log"'
                """)
            try "hunter22\nplain\n".write(toFile: sandbox.file("l.txt"), atomically: false, encoding: .utf8)
            try "s\n".write(toFile: sandbox.file("s.txt"), atomically: false, encoding: .utf8)
            let environment = sandbox.environment.merging(["TOKEN": "hunter22"]) { $1 }
            for round in 1...3 {
                let run = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: environment)
                #expect(run.exitStatus == 0, "round \(round): \(run)")
            }
            // The two members run at once: in either order, each once, each with its real item.
            let ran = (sandbox.read("items.log") ?? "").split(separator: "\n").sorted()
            #expect(ran == ["item=hunter22", "item=plain"], "members ran with: \(sandbox.read("items.log") ?? "")")
        }

        /// A run whose every task is up to date but one declares
        /// `resources:` made the run's cgroup folders (memory, cpu) at its
        /// start and removed them at its end; a `kill -9` of that one
        /// process in between left them behind, as no supervisor was there
        /// to remove them. It makes none now: it starts no task.
        @Test func aNoOpRunWithResourcesMakesNoCgroupFolder() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  a: { sources: [a.c], generates: [a.o], resources: { cpus: 1, memory: 64M }, run: "cp a.c a.o" }
                """)
            try "int a;\n".write(toFile: sandbox.file("a.c"), atomically: false, encoding: .utf8)
            for round in 1...3 {
                let run = try FlowrunBinary.run(sandbox.arguments(workflow, ["--keep", "2"]), in: sandbox.path, environment: sandbox.environment)
                #expect(run.exitStatus == 0, "round \(round): \(run)")
            }
            let traced = try tracedRun(sandbox, workflow)
            #expect(traced.exitStatus == 0)
            #expect(traced.processes.isEmpty, "processes made:\n\(traced.processes.joined(separator: "\n"))")
            #expect(!traced.folderCalls.contains { $0.contains("/sys/fs/cgroup") },
                    "cgroup folders made by a run that starts no task:\n\(traced.folderCalls.joined(separator: "\n"))")
        }

        /// A run killed (`kill -9`: a no-op run has no supervisor to write
        /// anything after it) between making `.latest-ID` and renaming it
        /// over `latest` left that link in the record folder for good: no
        /// pruning looked at it. The pruning that removes run ID's record
        /// now removes its `.latest-ID` too.
        @Test func aLatestLinkLeftByAKilledRunGoesWithItsRecord() throws {
            let (sandbox, workflow) = try project()
            let first = try FlowrunBinary.run(sandbox.arguments(workflow, ["--keep", "1"]), in: sandbox.path, environment: sandbox.environment)
            #expect(first.exitStatus == 0, "\(first)")
            let killed = try FileManager.default.destinationOfSymbolicLink(atPath: sandbox.logDirectory + "/latest")
            // What the kill left: the run's own link, never renamed over `latest`.
            let left = sandbox.logDirectory + "/.latest-" + killed
            try FileManager.default.createSymbolicLink(atPath: left, withDestinationPath: killed)
            for round in 1...2 {
                let run = try FlowrunBinary.run(sandbox.arguments(workflow, ["--keep", "1"]), in: sandbox.path, environment: sandbox.environment)
                #expect(run.exitStatus == 0, "round \(round): \(run)")
            }
            #expect(!runFolders(in: sandbox.logDirectory).contains(killed), "the killed run's record was not pruned")
            var info = stat()
            #expect(lstat(left, &info) != 0, "\(left) is still there, pointing at a record that is gone")
        }

        /// A no-op run writes its record in one write at its end, after the
        /// console heard `run_finished`: when that write failed (a full
        /// disk, `ulimit -f`), the console's last line said `exit 0` while
        /// flowrun exited 1. The record is written before the console hears
        /// the end now, and the line says the code the run ends with.
        @Test func aNoOpRunWhoseRecordCannotBeWrittenSaysItsRealExitCode() throws {
            let (sandbox, workflow) = try project()
            let first = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment)
            #expect(first.exitStatus == 0, "\(first)")
            // Files of at most 600 bytes: events.jsonl (one write of about 700) cannot be written.
            let outcome = try ChildProcess.run(
                executable: try RunSandbox.tool("prlimit"), arguments: ["--fsize=600", try FlowrunBinary.path()] + sandbox.arguments(workflow, []),
                environment: sandbox.environment.map { "\($0.key)=\($0.value)" } + ["PATH=/usr/bin:/bin"], directory: sandbox.path,
                stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"), timeout: .seconds(60), launcher: nil)
            let stdout = sandbox.read("stdout") ?? ""
            let stderr = sandbox.read("stderr") ?? ""
            #expect(outcome.exitStatus == 1, "\(stdout) \(stderr)")
            #expect(stderr.contains("the run record is incomplete"), "\(stderr)")
            #expect(stdout.contains("up to date) — exit 1"), "the console's last line does not say exit 1:\n\(stdout)")
        }

        /// `flowrun watch` whose first run starts nothing (every task up to
        /// date): a source edited then is seen by the next run, which runs
        /// the task. The hashes one run took stand without a `stat` only in
        /// that run (`ContentHashCache.runStarting`); before, the next run
        /// took the old hash and said `up to date` for ever.
        @Test func aWatchWhoseFirstRunStartsNothingRunsATaskWhoseSourceChanged() throws {
            let sandbox = try RunSandbox()
            let text = """
                tasks:
                  copy: { sources: [a.txt], run: 'cat a.txt > "$SANDBOX/out.txt"' }
                """
            let workflow = try sandbox.write(workflow: text)
            try "one\n".write(toFile: sandbox.file("a.txt"), atomically: false, encoding: .utf8)
            let first = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment)
            #expect(first.exitStatus == 0 && sandbox.read("out.txt") == "one\n", "\(first)")
            // Settled (its ctime over 2 s old): a hash the watch's first run takes is kept (`FileStamp.settledMargin`).
            RunEndToEndParallel.IncrementalStampTests().waitUntilSettled(sandbox.file("a.txt"))
            let live = try RunEndToEnd.WatchTests.watch(sandbox, text)
            // The watch's first run: up to date, nothing started.
            try #require(RunEndToEnd.WatchTests.waitForRuns(sandbox, 2))
            let upToDate = RunEndToEnd.WatchTests.runs(sandbox)[1]
            #expect(RunEndToEnd.WatchTests.started(upToDate).isEmpty, "\(upToDate.overview)")
            try "two\n".write(toFile: sandbox.file("a.txt"), atomically: false, encoding: .utf8)
            try #require(RunEndToEnd.WatchTests.waitForRuns(sandbox, 3), "no run after the change")
            let changed = RunEndToEnd.WatchTests.runs(sandbox)[2]
            #expect(RunEndToEnd.WatchTests.started(changed) == ["copy"], "\(changed.overview)")
            #expect(sandbox.read("out.txt") == "two\n")
            live.signalGroup(SIGINT)
            #expect(live.finish().exitStatus == 130)
        }
    }
}
