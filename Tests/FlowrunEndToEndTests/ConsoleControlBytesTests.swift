import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// SPEC §11 "control characters in anything printed to the console are shown
/// escaped", in the places issue 32 found raw bytes: error messages that
/// echo a typed argument, the workflow's name in `graph`, a C1 control
/// (U+009B, a one-byte CSI) in JSON output, and a `::error::` line at column
/// 0 from `flowrun logs` on a terminal.
@Suite struct ConsoleControlBytesTests {
    /// ESC, a colour sequence and U+009B, as a user might paste them.
    static let hostile = "\u{1B}[31mX\u{9B}2J"

    /// Raw control bytes a terminal would act on: C0 but tab and newline, DEL, C1.
    static func controlBytes(in text: String) -> [String] {
        text.unicodeScalars.filter { scalar in
            (scalar.value < 0x20 && scalar != "\n" && scalar != "\t") || (0x7F..<0xA0).contains(scalar.value)
        }.map { String(format: "U+%04X", $0.value) }
    }

    @Test func typedArgumentsAreEchoedEscapedInErrors() throws {
        let directory = try TemporaryDirectory(prefix: "flowrun-control")
        let workflow = try directory.write("tasks:\n  build: { run: \"true\" }\n", to: "flowrun.yaml")
        let cases: [[String]] = [
            [workflow, "--only", Self.hostile],
            [workflow, "--var", Self.hostile + "=1"],
            [workflow, "--bogus" + Self.hostile],
            [workflow, "--output", Self.hostile],
            ["runs", "-n", Self.hostile],
            ["validate", Self.hostile],
            ["graph", Self.hostile],
            ["list", Self.hostile],
        ]
        for arguments in cases {
            let run = try FlowrunBinary.run(arguments, in: directory.path)
            #expect(run.exitStatus == 2, "\(arguments): \(run)")
            #expect(Self.controlBytes(in: run.stderr).isEmpty, "\(arguments): raw \(Self.controlBytes(in: run.stderr)) in \(run.stderr.debugDescription)")
            #expect(run.stderr.contains("\\e[31mX\\u{9b}2J"), "\(arguments): the argument is not shown escaped: \(run.stderr.debugDescription)")
        }
    }

    @Test func aWorkflowNameIsEscapedInTheGraph() throws {
        let directory = try TemporaryDirectory(prefix: "flowrun-control")
        let workflow = try directory.write("name: \"w\\e[31mred\\u009b\"\ntasks:\n  build: { run: \"true\" }\n", to: "flowrun.yaml")
        for format in ["dot", "mermaid"] {
            let run = try FlowrunBinary.run(["graph", workflow, "--format", format], in: directory.path)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(Self.controlBytes(in: run.stdout).isEmpty, "\(format): raw \(Self.controlBytes(in: run.stdout)) in \(run.stdout.debugDescription)")
        }
        let dot = try FlowrunBinary.run(["graph", workflow], in: directory.path)
        #expect(dot.stdout.hasPrefix("digraph \"w\\\\e[31mred\\\\u{9b}\" {"), "\(dot.stdout.debugDescription)")
    }

    /// Items holding ESC and U+009B, printed by a task and carried in names,
    /// items and the log tail: `--output json`, `--dry-run --output json` and
    /// events.jsonl hold them as `\u001b` and `\u009b`, never raw.
    @Test func c1AndC0ControlsAreEscapedInJSON() throws {
        let sandbox = try RunSandbox()
        let text = """
            groups:
              fan:
                foreach: ["a\\e[2Jb", "c\\u009b2Jd"]
                task: { name: "m-${{ item }}", run: "printf '%s\\\\n' \\"${{ item }}\\"; exit 1" }

            """
        let run = try sandbox.run(text, output: "json")
        #expect(run.exitStatus == 1, "\(run)")
        let dryRun = try FlowrunBinary.run(sandbox.arguments(sandbox.file("workflow.yaml"), ["--dry-run"], output: "json"), in: sandbox.path)
        #expect(dryRun.exitStatus == 0, "\(dryRun)")
        let record = try sandbox.record()
        let events = record.eventLines.joined(separator: "\n")
        for (label, output) in [("--output json", run.stdout), ("--dry-run --output json", dryRun.stdout), ("events.jsonl", events)] {
            #expect(Self.controlBytes(in: output).isEmpty, "\(label): raw \(Self.controlBytes(in: output))")
            #expect(output.contains("\\u009b"), "\(label) does not carry U+009B escaped")
            #expect(output.contains("\\u001b"), "\(label) does not carry ESC escaped")
        }
    }

    /// `flowrun logs` on a terminal: a line a task printed as `::error::…`
    /// (a command to GitHub's runner) starts with `\x3a:`, an ESC shows as
    /// `\e`; into a pipe the same log goes out byte for byte.
    @Test func logsOnATerminalStartNoLineWithTwoColons() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            tasks:
              say:
                run: |
                  echo '::error::forged'
                  printf 'red \\033[31mtext\\n'

            """)
        #expect(run.exitStatus == 0, "\(run)")
        let terminal = try PseudoTerminal()
        let scratch = try TemporaryDirectory(prefix: "flowrun-logs")
        let shown = try ChildProcess.run(
            executable: try FlowrunBinary.path(), arguments: ["logs", "--log-dir", sandbox.logDirectory, "say"],
            environment: ["PATH=/usr/bin:/bin", "NO_COLOR=1"], directory: sandbox.path,
            stdoutPath: terminal.devicePath, stderrPath: scratch.path + "/stderr", timeout: .seconds(20), launcher: nil)
        #expect(shown.exitStatus == 0, "\(ProcessProbe.text(scratch.path + "/stderr") ?? "")")
        let screen = terminal.drain().replacingOccurrences(of: "\r\n", with: "\n")
        #expect(screen == "\\x3a:error::forged\nred \\e[31mtext\n", "\(screen.debugDescription)")
        let piped = try FlowrunBinary.run(["logs", "--log-dir", sandbox.logDirectory, "say"], in: sandbox.path)
        #expect(piped.stdout == "::error::forged\nred \u{1B}[31mtext\n", "\(piped.stdout.debugDescription)")
    }
}
