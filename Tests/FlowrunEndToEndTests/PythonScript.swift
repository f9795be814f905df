import Foundation

/// Runs a python3 script the test writes (the schema checks use python3's
/// `jsonschema` and `yaml`, the SVG check its XML parser). A missing python3
/// or module fails the test with its name: nothing is skipped silently.
enum PythonScript {
    struct Result {
        var stdout: String
        var stderr: String
        var exitStatus: Int32?
    }

    /// Modules the script imports, checked first so a missing one is named.
    static func run(_ script: String, arguments: [String] = [], modules: [String] = [],
                    timeout: Duration = .seconds(120)) throws -> Result {
        let scratch = try TemporaryDirectory(prefix: "flowrun-python")
        let check = modules.map { "import \($0)" }.joined(separator: "\n")
        let guarded = """
            import sys
            try:
            \(check.isEmpty ? "    pass" : check.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            except ImportError as error:
                print("python3 lacks a module this test needs: %s (CI installs it: .ci/run)" % error, file=sys.stderr)
                sys.exit(97)
            """ + "\n" + script
        let scriptPath = try scratch.write(guarded, to: "script.py")
        let outcome = try ChildProcess.run(
            executable: "/usr/bin/env", arguments: ["python3", scriptPath] + arguments,
            environment: ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" },
            stdoutPath: scratch.path + "/out", stderrPath: scratch.path + "/err", timeout: timeout, launcher: nil)
        let result = Result(
            stdout: (try? String(contentsOfFile: scratch.path + "/out", encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: scratch.path + "/err", encoding: .utf8)) ?? "",
            exitStatus: outcome.exitStatus)
        if result.exitStatus == 127 { throw FlowrunBinaryError("python3 is not installed; this test needs it") }
        if result.exitStatus == 97 { throw FlowrunBinaryError(result.stderr) }
        return result
    }
}
