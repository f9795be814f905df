import Foundation
import Testing

/// `bench/expression-functions.py`'s 2,000-task file with functions and a
/// computed var (issue 35), planned by the binary: its `--dry-run` and
/// `--dry-run --output json` are byte for byte what they were before the
/// JSON got its own writer and the dry run its shortcuts (SHA-256 of the
/// output recorded then, the host's architecture written `ARCH`).
@Suite struct ExpressionFunctionsDryRunGoldenTests {
    static let tasks = 2000

    /// The bench's `workflow(functions=True)`, line for line.
    static var workflow: String {
        var lines = [#"vars: { version: "1.2.3", ref: refs/heads/main, suites: "unit,lint", commit: { sh: "echo 0123abc" } }"#, "tasks:"]
        for n in 0..<tasks {
            let needs = n % 10 != 0 ? "\n    needs: [t\(n - 1)]" : ""
            let run = "echo ${{ format('v{0}-{1}-{2}', vars.version, host.arch, \(n)) }} ${{ vars.commit }} "
                + "${{ startsWith(vars.ref, 'refs/tags/') && 'release' || 'debug' }} "
                + "${{ join(split(vars.suites, ','), ' ') }}"
            let condition = "${{ contains(vars.suites, 'unit') && !endsWith(vars.ref, 'x') }}"
            lines.append("  t\(n):\(needs)\n    if: \(condition)\n    run: \(run)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test(arguments: [
        (["--dry-run", "--output", "json"], "e9796128600baa05021e1ed54a27cf2efdda3de66f5ca8721d445d25d2ab419d"),
        (["--dry-run"], "c676b6e8394cc82426e1d9054eac6cc331451bfc515d40ece80efe5993afc6c2"),
    ])
    func theBenchFilesDryRunIsByteForByteWhatItWas(_ extra: [String], _ expected: String) throws {
        let directory = try TemporaryDirectory(prefix: "golden")
        try Self.workflow.write(toFile: directory.path + "/functions.yaml", atomically: true, encoding: .utf8)
        let run = try FlowrunBinary.run(["functions.yaml"] + extra, in: directory.path, timeout: .seconds(120))
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run.stderr)")
        let uname = try ChildProcess.run(executable: try RunSandbox.tool("uname"), arguments: ["-m"], environment: [], directory: directory.path,
                                         stdoutPath: directory.path + "/arch", stderrPath: directory.path + "/arch.err", timeout: .seconds(30), launcher: nil)
        #expect(uname.exitStatus == 0)
        let arch = try String(contentsOfFile: directory.path + "/arch", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!arch.isEmpty)
        let shown = run.stdout.replacingOccurrences(of: arch, with: "ARCH")
        #expect(shown.utf8.count > 1_000_000, "\(shown.prefix(400))")
        try shown.write(toFile: directory.path + "/shown", atomically: true, encoding: .utf8)
        let sum = try ChildProcess.run(executable: try RunSandbox.tool("sha256sum"), arguments: ["shown"], environment: [], directory: directory.path,
                                       stdoutPath: directory.path + "/sum", stderrPath: directory.path + "/sum.err", timeout: .seconds(30), launcher: nil)
        #expect(sum.exitStatus == 0)
        let digest = try String(contentsOfFile: directory.path + "/sum", encoding: .utf8).prefix(64)
        #expect(digest == expected, "\(extra): the output changed; its start:\n\(shown.prefix(1500))")
    }
}
