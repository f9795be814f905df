import Foundation
import Testing

extension RunEndToEndParallel {
    /// A task's own interpreter (SPEC §10): `shell:` runs the script as
    /// `PROGRAM ARGS… FILE`; a `run:` starting with `#!` runs as that file,
    /// written 0700 and kept in the run record.
    @Suite struct RunInterpreterTests {
        @Test func aTaskShellRunsItsScriptAsAFileKeptInTheRecord() throws {
            _ = try RunSandbox.tool("python3")
            _ = try RunSandbox.tool("bash")
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  report:
                    shell: python3
                    run: |
                      import os, sys
                      print("python", sys.version_info[0], os.environ["FLOWRUN_TASK"], sys.argv[0].endswith(".script"))
                  strict:
                    shell: [bash, -eu, -o, pipefail]
                    run: |
                      false | true
                      echo "not reached" > "$SANDBOX/strict-went-on"
                  words:
                    shell: bash -eu
                    run: echo "$BASH_VERSION" > "$SANDBOX/bash-version"; echo $UNSET_VARIABLE
                  lenient:
                    run: false | true; echo "sh went on" > "$SANDBOX/lenient-went-on"
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("report") == "succeeded", "\(record.statuses)")
            #expect(record.stdout("report") == "python 3 report True")
            // pipefail and -e from the list: the failing pipe stops the script.
            #expect(record.status("strict") == "failed")
            #expect(!sandbox.exists("strict-went-on"))
            // A string is split into words: bash with -eu (the unset variable fails it).
            #expect(sandbox.read("bash-version")?.isEmpty == false)
            #expect(record.status("words") == "failed")
            #expect(record.status("lenient") == "succeeded")
            #expect(sandbox.read("lenient-went-on") == "sh went on\n")
            // The script file stays in the record, private, next to the task's log.
            let script = try #require(Self.scriptFile(of: "report", in: record))
            #expect(try String(contentsOfFile: script, encoding: .utf8).hasPrefix("import os, sys\n"))
            #expect(try Self.mode(of: script) == 0o600)
        }

        @Test func aShebangScriptRunsAsItsOwnFile() throws {
            _ = try RunSandbox.tool("python3")
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  py:
                    run: |
                      #!/usr/bin/env python3
                      import os, stat, sys
                      print("shebang", oct(stat.S_IMODE(os.stat(sys.argv[0]).st_mode)), os.environ["FLOWRUN_TASK"])
                  sh:
                    run: |
                      #!/bin/sh -eu
                      echo "$0" > "$SANDBOX/zero"
                      echo $UNSET_VARIABLE
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("py") == "succeeded", "\(run)")
            #expect(record.stdout("py") == "shebang 0o700 py")
            let script = try #require(Self.scriptFile(of: "py", in: record))
            #expect(try String(contentsOfFile: script, encoding: .utf8).hasPrefix("#!/usr/bin/env python3\n"))
            #expect(try Self.mode(of: script) == 0o700)
            // The #! line's own option (-u) applies: the unset variable fails the task.
            #expect(record.status("sh") == "failed")
            #expect(sandbox.read("zero")?.hasSuffix(".script\n") == true, "\(sandbox.read("zero") ?? "no $0 written")")
        }

        @Test func theDryRunShowsTheInterpreter() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                tasks:
                  a: { shell: [bash, -eu], run: echo a }
                  b: { run: "#!/usr/bin/env python3\\nprint('b')\\n" }
                  c: { run: echo c }
                """, to: "shells.yaml")
            let run = try FlowrunBinary.run([file, "--dry-run"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("""
                      run:       echo a
                      shell:     bash -eu SCRIPT-FILE
                """), "\(run)")
            #expect(run.stdout.contains("""
                      run:       #!/usr/bin/env python3  (+1 more line)
                      shell:     #!/usr/bin/env python3 (the script runs as its own file)
                """), "\(run)")
            #expect(!run.stdout.contains("  c  [task]\n      run:       echo c\n      shell:"), "\(run)")
            let json = try FlowrunBinary.run([file, "--dry-run", "--output", "json"])
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let steps = try #require(plan["steps"] as? [[String: Any]])
            func action(_ name: String) -> [String: Any]? { steps.first { $0["name"] as? String == name }?["action"] as? [String: Any] }
            #expect(action("a")?["shell"] as? [String] == ["bash", "-eu"])
            #expect(action("b")?["shebang"] as? String == "#!/usr/bin/env python3")
            #expect(action("c")?["shell"] == nil && action("c")?["shebang"] == nil)
        }

        @Test func aMissingInterpreterFailsTheTaskNamingIt() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  m: { shell: no-such-interpreter, run: echo }
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            let reason = try #require(record.finished("m")?["reason"] as? String)
            #expect(reason.hasPrefix("cannot start no-such-interpreter: "), "\(reason)")
        }

        @Test func badShellsAreValidationErrors() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                tasks:
                  a: { shell: [], run: echo }
                  b: { shell: python3, run: "#!/bin/sh\\necho" }
                  c: { shell: bash, sleep: 1s }
                  d: { shell: { program: bash }, run: echo }
                  e: { shel: bash, run: echo }
                """, to: "bad-shells.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == [
                "\(file):2:15: error: shell needs a program, like python3 or bash -eu, found nothing",
                "\(file):3:15: error: this task has both shell: and a #! line choosing how its script runs: keep one",
                "\(file):4:15: error: shell applies only to run: tasks",
                "\(file):5:15: error: expected a program for shell (like python3, bash -eu or [bash, -eu, -o, pipefail]), found a mapping",
                "\(file):6:8: error: unknown key 'shel' in task 'e' (did you mean 'shell'?)",
            ], "\(run)")
        }

        /// The top-level `shell:` takes arguments, as a string or a list,
        /// like a task's (SPEC §15): every script runs as `PROGRAM ARGS… -c
        /// SCRIPT`, a long one (through a file) with the same arguments.
        /// Before, `shell: bash -uc` was one program name and a list was refused.
        @Test(arguments: ["bash -u -o pipefail", "[bash, -u, -o, pipefail]"])
        func theWorkflowShellTakesArguments(shell: String) throws {
            _ = try RunSandbox.tool("bash")
            let sandbox = try RunSandbox()
            let long = String(repeating: "# padding to pass one argument's limit\n", count: 4000)
            let run = try sandbox.run("""
                shell: \(shell)
                tasks:
                  flags: { run: 'echo "$0 $-" > "$SANDBOX/flags"; set -o | grep pipefail >> "$SANDBOX/flags"' }
                  unset: { run: 'echo "$NOT_SET_ANYWHERE"' }
                  piped: { run: 'false | cat' }
                  long:
                    run: |
                \(long.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n"))
                      echo "$-" > "$SANDBOX/long-flags"

                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("flags") == "succeeded" && record.status("long") == "succeeded", "\(record.overview)")
            // -u: an unset variable fails the script; pipefail: a failing pipe fails it.
            #expect(record.status("unset") == "failed" && record.status("piped") == "failed", "\(record.overview)")
            let flags = sandbox.lines("flags")
            #expect(flags.first?.hasPrefix("bash ") == true && flags.first?.contains("u") == true, "\(flags)")
            #expect(flags.last?.contains("on") == true, "\(flags)")
            #expect(sandbox.read("long-flags")?.contains("u") == true, "\(sandbox.read("long-flags") ?? "")")
        }

        /// The Argo export runs each script with the workflow shell's words,
        /// each quoted on its own (before: `'bash -eu'`, one word).
        @Test func theWorkflowShellsArgumentsExportToArgo() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("shell: bash -eu\ntasks:\n  a: { run: echo hi }\n", to: "shell-export.yaml")
            let run = try FlowrunBinary.run(["export", file, "--to", "argo", "--image", "debian"])
            #expect(run.exitStatus == 0, "\(run)")
            let documents = try ArgoManifest.documents(run.stdout)
            let workflows = documents.filter { $0["kind"] as? String == "Workflow" }
            let templates = try #require((workflows.first?["spec"] as? [String: Any])?["templates"] as? [[String: Any]])
            let source = ((templates.first { $0["name"] as? String == "a" }?["script"] as? [String: Any])?["source"] as? String) ?? ""
            #expect(source.contains(#"{ 'bash' '-eu' "$flowrun_dir/script" < /dev/null;"#), "\(source)")
        }

        /// A top-level `shell:` that cannot start is a validation error at
        /// its line, not a `cannot start` failure of every task; so are
        /// `${{ }}` (shell is read as written) and a `c` among its options
        /// (flowrun adds `-c SCRIPT` itself).
        @Test(arguments: [
            ("no-such-shell-anywhere -e", "shell 'no-such-shell-anywhere' is not found on PATH: install it, or give its full path"),
            ("/no/such/bash", "shell '/no/such/bash' does not exist: give the path of an installed shell, like /bin/bash"),
            ("/etc", "shell '/etc' is not an executable file: give the path of a shell, like /bin/bash"),
            ("bash -uc", "shell 'bash -uc' has -c in '-uc': flowrun adds -c SCRIPT itself; write shell: bash -u"),
            ("[bash, -c]", "shell 'bash -c' has -c in '-c': flowrun adds -c SCRIPT itself; write shell: bash"),
            ("\"${{ vars.sh }}\"", "shell is read as written and does not evaluate ${{ }}: name the program (like bash -eu); to choose it per run, use a script that starts with #! or pass the choice through env:"),
        ])
        func aWorkflowShellThatCannotStartIsAValidationError(shell: String, message: String) throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                vars: { sh: bash }
                shell: \(shell)
                tasks:
                  a: { run: echo }
                """, to: "shell.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == ["\(file):2:8: error: \(message)"], "\(run)")
        }

        @Test func anInterpreterExportsToArgo() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                tasks:
                  py: { shell: [python3, -u], run: "print('py')" }
                  bang: { run: "#!/usr/bin/env python3\\nprint('bang')\\n" }
                """, to: "export.yaml")
            let run = try FlowrunBinary.run(["export", file, "--to", "argo", "--image", "python:3-alpine"])
            #expect(run.exitStatus == 0, "\(run)")
            let documents = try ArgoManifest.documents(run.stdout)
            let workflows = documents.filter { $0["kind"] as? String == "Workflow" }
            try SchemaValidator.validate(workflows, label: file)
            let templates = try #require((workflows.first?["spec"] as? [String: Any])?["templates"] as? [[String: Any]])
            func source(_ name: String) -> String {
                ((templates.first { $0["name"] as? String == name }?["script"] as? [String: Any])?["source"] as? String) ?? ""
            }
            #expect(source("py").contains(#"{ 'python3' '-u' "$flowrun_dir/script" < /dev/null;"#), "\(source("py"))")
            #expect(source("bang").contains(#"{ chmod 700 "$flowrun_dir/script" && "$flowrun_dir/script" < /dev/null;"#), "\(source("bang"))")

            // A value would arrive as a shell variable, which Python cannot read in its text.
            let refused = try directory.write("""
                vars: { who: me }
                tasks:
                  py: { shell: python3, run: "print(${{ vars.who }})" }
                """, to: "refused.yaml")
            let refusal = try FlowrunBinary.run(["export", refused, "--to", "argo"])
            #expect(refusal.exitStatus == 2, "\(refusal)")
            #expect(refusal.diagnostics == [
                "\(refused):3:30: error: cannot export to Argo: a script run by its own interpreter (shell: or #!) cannot take ${{ }} values on a cluster, where they arrive as shell variables: pass them through env: and read the environment",
            ], "\(refusal)")
        }

        /// `logs/INDEX-NAME.log.1.script`: attempt 1's script file.
        static func scriptFile(of task: String, in record: RunRecordFiles) -> String? {
            // Beside the task's log, in its shard (`logs/000/`).
            let logs = record.directory + "/logs"
            let names = (try? FileManager.default.subpathsOfDirectory(atPath: logs)) ?? []
            return names.first { $0.hasSuffix("-\(task).log.1.script") }.map { logs + "/" + $0 }
        }

        static func mode(of path: String) throws -> Int {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            return (attributes[.posixPermissions] as? Int) ?? -1
        }
    }
}
