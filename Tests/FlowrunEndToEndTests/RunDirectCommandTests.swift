import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// A `run:` that is one simple command is exec'd by flowrun itself, not
    /// through `/bin/sh -c` (docs/RUNNING.md, "Commands flowrun runs without
    /// the shell"), with what the shell would have given it: its argv, its
    /// environment, its exit code, the shell's own message when it cannot run.
    @Suite struct RunDirectCommandTests {
        /// A script in the sandbox that prints the name of its parent process:
        /// flowrun for a direct exec, `sh` when a shell ran it.
        private static func writeParentProbe(in sandbox: RunSandbox) throws {
            try "#!/bin/sh\ncat /proc/$PPID/comm\n".write(toFile: sandbox.file("parent"), atomically: true, encoding: .utf8)
            #expect(chmod(sandbox.file("parent"), 0o755) == 0)
        }

        @Test func aSimpleCommandRunsWithoutTheShell() throws {
            let sandbox = try RunSandbox()
            try Self.writeParentProbe(in: sandbox)
            let run = try sandbox.run("""
                tasks:
                  direct: {run: "./parent"}
                  block: {run: "./parent\\n"}
                  with-syntax: {run: "./parent; true"}
                  with-shell-set: {run: "./parent", shell: /bin/sh}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.stdout("direct") == "flowrun")
            #expect(record.stdout("block") == "flowrun")
            #expect(record.stdout("with-syntax") == "sh")
            #expect(record.stdout("with-shell-set") == "sh")
        }

        /// The command's exit code; 127 and sh's message for a command not
        /// found, 126 for a file that is not executable, and a file without
        /// `#!` run as a shell script, as sh does.
        @Test func exitCodesAndFailuresAreTheShells() throws {
            let sandbox = try RunSandbox()
            try "#!/bin/sh\nexit \"$1\"\n".write(toFile: sandbox.file("exit-with"), atomically: true, encoding: .utf8)
            try "echo no shebang, run by sh\n".write(toFile: sandbox.file("plain-script"), atomically: true, encoding: .utf8)
            try "#!/bin/sh\necho never\n".write(toFile: sandbox.file("not-executable"), atomically: true, encoding: .utf8)
            #expect(chmod(sandbox.file("exit-with"), 0o755) == 0)
            #expect(chmod(sandbox.file("plain-script"), 0o755) == 0)
            let run = try sandbox.run("""
                tasks:
                  seven: {run: "./exit-with 7"}
                  false: {run: "false"}
                  missing: {run: "no-such-command-here --flag"}
                  not-executable: {run: "./not-executable"}
                  plain-script: {run: "./plain-script"}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(integer(record.task("seven")?["exit_code"]) == 7)
            #expect(integer(record.task("false")?["exit_code"]) == 1)
            #expect(integer(record.task("missing")?["exit_code"]) == 127)
            #expect(record.logText("missing") == "/bin/sh: 1: no-such-command-here: not found\n")
            #expect(integer(record.task("not-executable")?["exit_code"]) == 126)
            #expect(record.stdout("plain-script") == "no shebang, run by sh")
        }

        /// A first word that is a shell builtin or keyword goes to the shell:
        /// dash's `echo` prints `-e`, /bin/echo would take it as an option.
        @Test func aBuiltinsNameGoesThroughTheShell() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  echo: {run: "echo -e x"}
                  cd: {run: "cd /"}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(try sandbox.record().stdout("echo") == "-e x")
        }

        /// A command run directly runs at the caller's nice value (`nice -n 5
        /// flowrun`), as a shell would: field 19 of /proc/self/stat.
        @Test func aDirectCommandRunsAtTheCallersNiceValue() throws {
            let sandbox = try RunSandbox()
            let outcome = try sandbox.run(wrapped: [try RunSandbox.tool("nice"), "-n", "5"], """
                tasks:
                  stat: {run: "cat /proc/self/stat"}
                """)
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")")
            let record = try sandbox.record()
            let stat = record.stdout("stat") ?? ""
            let fields = stat[(stat.lastIndex(of: ")") ?? stat.startIndex)...].split(separator: " ")
            let expected = min(19, getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) + 5)
            // After the ")" that ends the command's name: field 3 is the first, so nice (19) is the 17th.
            #expect(fields.count > 17 && fields[17] == "\(expected)", "\(stat)")
        }

        /// A command run directly is looked up in PATH at each start, as sh
        /// would: a later task finds what sh finds after an earlier one
        /// changed a folder of the PATH: a command installed in an earlier
        /// folder, made not executable, removed, or put in a folder made
        /// during the run.
        @Test func aCommandIsLookedUpAgainAfterATaskChangesAFolderOfThePath() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("early"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: sandbox.file("late"), withIntermediateDirectories: true)
            try "#!/bin/sh\necho late\n".write(toFile: sandbox.file("late/probe"), atomically: true, encoding: .utf8)
            #expect(chmod(sandbox.file("late/probe"), 0o755) == 0)
            let searchPath = ["made/bin", "early", "late"].map { sandbox.file($0) }.joined(separator: ":") + ":/usr/bin:/bin"
            let run = try sandbox.run("""
                tasks:
                  before: {run: "probe"}
                  install: {run: "printf '#!/bin/sh\\\\necho early\\\\n' > early/probe && chmod +x early/probe", needs: [before]}
                  installed: {run: "probe", needs: [install]}
                  disable: {run: "chmod -x early/probe", needs: [installed]}
                  disabled: {run: "probe", needs: [disable]}
                  enable: {run: "chmod +x early/probe", needs: [disabled]}
                  enabled: {run: "probe", needs: [enable]}
                  remove: {run: "rm early/probe", needs: [enabled]}
                  removed: {run: "probe", needs: [remove]}
                  make-folder: {run: "mkdir -p made/bin && cp late/probe made/bin/probe && sed -i s/late/made/ made/bin/probe", needs: [removed]}
                  in-made-folder: {run: "probe", needs: [make-folder]}
                """, environment: ["PATH": searchPath])
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.stdout("before") == "late")
            #expect(record.stdout("installed") == "early")
            #expect(record.stdout("disabled") == "late")
            #expect(record.stdout("enabled") == "early")
            #expect(record.stdout("removed") == "late")
            #expect(record.stdout("in-made-folder") == "made")
        }

        /// A PATH that lists a folder twice (flowrun looks in it once) and
        /// names the current folder both as an empty entry and as `.`: a
        /// command run directly is found where sh finds it, before and after
        /// the copy in the current folder is removed.
        @Test func aPathWithRepeatedFoldersFindsWhatTheShellFinds() throws {
            let sandbox = try RunSandbox()
            for folder in ["early", "late"] {
                try FileManager.default.createDirectory(atPath: sandbox.file(folder), withIntermediateDirectories: true)
            }
            for (file, text) in [("late/probe", "late"), ("probe", "here")] {
                try "#!/bin/sh\necho \(text)\n".write(toFile: sandbox.file(file), atomically: true, encoding: .utf8)
                #expect(chmod(sandbox.file(file), 0o755) == 0)
            }
            let early = sandbox.file("early")
            let searchPath = [early, early, "", sandbox.file("late"), ".", early, "/usr/bin", "/bin"].joined(separator: ":")
            let run = try sandbox.run("""
                tasks:
                  here-direct: {run: "probe"}
                  here-sh: {run: "probe; true"}
                  remove: {run: "rm probe", needs: [here-direct, here-sh]}
                  late-direct: {run: "probe", needs: [remove]}
                  late-sh: {run: "probe; true", needs: [remove]}
                """, environment: ["PATH": searchPath])
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.stdout("here-direct") == "here" && record.stdout("here-sh") == "here", "\(record.overview)")
            #expect(record.stdout("late-direct") == "late" && record.stdout("late-sh") == "late", "\(record.overview)")
        }

        /// A command run directly sees the environment it would see under
        /// `sh -c`: flowrun's, with PWD set to the directory (the harness's
        /// PWD is not the sandbox) and without a name that is no shell name.
        @Test func theEnvironmentIsWhatTheShellWouldPassOn() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  direct: {run: "printenv"}
                  through-sh: {run: "printenv; true"}
                """, environment: ["PWD": "/", "NOT-A-SHELL-NAME": "x"])
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let perTask = ["FLOWRUN_TASK=", "FLOWRUN_OUTPUT=", "FLOWRUN_TREE="]
            func variables(_ task: String) -> [String] {
                (record.stdout(task) ?? "").split(separator: "\n").map(String.init)
                    .filter { line in !perTask.contains { line.hasPrefix($0) } }.sorted()
            }
            #expect(variables("direct") == variables("through-sh"))
            #expect(variables("direct").contains("PWD=\(URL(fileURLWithPath: sandbox.path).resolvingSymlinksInPath().path)"))
            #expect(!variables("direct").contains { $0.hasPrefix("NOT-A-SHELL-NAME=") })
        }
    }
}
