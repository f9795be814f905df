import Foundation

/// Checks the examples of one markdown document against the built binary,
/// by the conventions of docs/WRITING-DOCS.md ("How the examples are
/// checked"):
///
/// - a ```yaml block is a whole workflow and `flowrun validate` accepts it;
///   after `<!-- invalid -->` it is rejected, with exactly the lines of the
///   ```text block that follows it (or as the ```console block after it shows);
///   after `<!-- fragment: WHY -->` it is not checked;
/// - a ```console block's `$ ` lines run with `/bin/sh` in a fresh folder
///   holding a copy of `workflows/` and every `# NAME.yaml` block of the
///   document, `flowrun` on the `PATH`; what a command prints (stdout and
///   stderr together) matches the lines shown under it (`ShownOutput`), and
///   a command shown without output exits 0; after `<!-- not-run: WHY -->`
///   the block is not run.
struct DocExampleChecker {
    /// What one document's check found.
    struct Report {
        var problems: [String] = []
        var workflowsValidated = 0
        var invalidExamplesChecked = 0
        var commandsRun = 0
        /// `document:line — why`, for every block the markers exempt.
        var unchecked: [String] = []
    }

    let document: String
    let markdown: String
    /// The repository's `workflows/`, copied into each document's folder.
    let workflowsFolder: String

    func check() throws -> Report {
        var report = Report()
        let blocks = DocBlock.blocks(in: markdown, document: document)
        let sandbox = try TemporaryDirectory(prefix: "flowrun-docs")
        try FileManager.default.copyItem(atPath: workflowsFolder, toPath: sandbox.path + "/workflows")
        let bin = sandbox.path + "/.bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: bin + "/flowrun", withDestinationPath: try FlowrunBinary.path())

        // Every named workflow first: a command may run a file shown further down.
        var named: [String: DocBlock] = [:]
        for block in blocks where block.language == "yaml" {
            if case .fragment = block.marker { continue }
            if case .notFlowrun = block.marker { continue }
            guard let name = block.fileName else { continue }
            if let earlier = named[name] {
                report.problems.append("\(block.place): a second `# \(name)` (the first is at line \(earlier.line)); commands could not tell them apart")
            }
            named[name] = block
            try sandbox.write(block.text, to: name)
        }

        for (index, block) in blocks.enumerated() {
            let next = blocks.indices.contains(index + 1) ? blocks[index + 1] : nil
            if case .unknown(let text) = block.marker {
                report.problems.append("\(block.place): unknown marker `<!-- \(text) -->` (use `fragment: WHY`, `invalid`, `not-flowrun: WHY` or `not-run: WHY`)")
                continue
            }
            switch block.language {
            case "yaml":
                try checkWorkflow(block, next: next, in: sandbox, report: &report)
            case "console":
                if case .notRun(let why) = block.marker {
                    report.unchecked.append("\(block.place) — not run: \(why)")
                    continue
                }
                if block.marker != .none {
                    report.problems.append("\(block.place): a console block takes only `<!-- not-run: WHY -->`")
                    continue
                }
                try runCommands(of: block, in: sandbox, bin: bin, report: &report)
            default:
                if block.marker != .none {
                    report.problems.append("\(block.place): a marker on a ```\(block.language) block, which is never checked")
                }
            }
        }
        return report
    }

    private func checkWorkflow(_ block: DocBlock, next: DocBlock?, in sandbox: TemporaryDirectory, report: inout Report) throws {
        switch block.marker {
        case .fragment(let why):
            report.unchecked.append("\(block.place) — fragment: \(why)")
            return
        case .notFlowrun(let why):
            report.unchecked.append("\(block.place) — not flowrun: \(why)")
            return
        case .notRun:
            report.problems.append("\(block.place): `not-run` is for console blocks; a YAML piece is a `fragment: WHY`")
            return
        default: break
        }
        let name = block.fileName ?? "doc-example-\(block.line).yaml"
        if block.fileName == nil { try sandbox.write(block.text, to: name) }
        let run = try Self.shell("exec 2>&1; flowrun validate \(name)", in: sandbox.path, bin: sandbox.path + "/.bin")
        if block.marker == .invalid {
            guard run.exitStatus == 2 else {
                report.problems.append("\(block.place): marked invalid, but `flowrun validate` exited \(run.exitDescription):\n\(run.output)")
                return
            }
            guard block.fileName != nil else {
                report.problems.append("\(block.place): an invalid example starts with `# NAME.yaml`, so its errors can name the file")
                return
            }
            switch next?.language {
            case "text", "":
                let shown = next!.lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
                var printed = run.output.split(separator: "\n").map(String.init)
                // The closing count ("3 errors") is not part of the errors.
                if let last = printed.last, last.first?.isNumber == true, last.contains("error") { printed.removeLast() }
                if !ShownOutput.matches(shown: shown, actual: printed.joined(separator: "\n")) {
                    report.problems.append("\(next!.place): the errors shown for \(name) are not what `flowrun validate` prints:\n" + printed.joined(separator: "\n"))
                }
            case "console":
                break  // run and compared as a console block
            default:
                report.problems.append("\(block.place): an invalid example is followed by the errors it gets (a ```text or ```console block)")
                return
            }
            report.invalidExamplesChecked += 1
        } else {
            if run.exitStatus != 0 {
                report.problems.append("\(block.place): `flowrun validate` rejects this example (exit \(run.exitDescription)); fix it, or mark it `<!-- invalid -->` or `<!-- fragment: WHY -->`:\n\(run.output)")
            }
            report.workflowsValidated += 1
        }
    }

    private func runCommands(of block: DocBlock, in sandbox: TemporaryDirectory, bin: String, report: inout Report) throws {
        let commands = ShownCommand.commands(in: block)
        if commands.isEmpty {
            report.problems.append("\(block.place): a console block with no `$ ` command; mark it `<!-- not-run: WHY -->` or make it a ```text block")
        }
        for command in commands {
            let run = try Self.shell("exec 2>&1\n" + command.command, in: sandbox.path, bin: bin)
            report.commandsRun += 1
            let shown = command.output
            if shown.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
                if run.exitStatus != 0 {
                    report.problems.append("\(document):\(command.line): `\(command.command)` exited \(run.exitDescription) (shown with no output, it must succeed):\n\(run.output.suffix(3000))")
                }
            } else if !ShownOutput.matches(shown: shown, actual: run.output) {
                report.problems.append("\(document):\(command.line): `\(command.command)` printed (exit \(run.exitDescription)):\n\(run.output.suffix(3000))\n--- the document shows:\n\(shown.joined(separator: "\n"))")
            }
        }
    }

    /// What one shell command printed, stdout and stderr in the order written.
    struct ShellRun {
        var output: String
        var exitStatus: Int32?
        var signal: Int32?
        var timedOut: Bool
        var exitDescription: String {
            timedOut ? "— killed after the timeout" : exitStatus.map(String.init) ?? "by signal \(signal ?? 0)"
        }
    }

    static func shell(_ script: String, in directory: String, bin: String) throws -> ShellRun {
        let scratch = try TemporaryDirectory(prefix: "flowrun-docs-run")
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment["PATH"] = bin + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["FLOWRUN_BINARY"] = nil
        let outcome = try ChildProcess.run(
            executable: "/bin/sh", arguments: ["-c", script],
            environment: environment.map { "\($0.key)=\($0.value)" },
            directory: directory, stdoutPath: scratch.path + "/out", stderrPath: scratch.path + "/err",
            timeout: .seconds(30), launcher: nil)
        let output = FileManager.default.contents(atPath: scratch.path + "/out").map { String(decoding: $0, as: UTF8.self) } ?? ""
        return ShellRun(output: output, exitStatus: outcome.exitStatus, signal: outcome.signal, timedOut: outcome.timedOut)
    }
}
