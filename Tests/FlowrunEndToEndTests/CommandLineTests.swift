import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The command-line contract (SPEC §7): exit codes, diagnostics, help, and a
/// dry run that runs nothing at all.
@Suite struct CommandLineTests {
    /// A valid workflow the option tests plan against.
    static let pipeline = """
        vars: {region: eu}
        tasks:
          fetch: {run: echo fetch}
          build: {run: make, needs: fetch}
          publish: {run: "./publish ${{ vars.region }}", needs: build}
        """

    // MARK: validate FILE...

    @Test func validatePrintsEveryProblemOfEachFileSortedByPosition() throws {
        let directory = try TemporaryDirectory()
        // Problems found by different stages (YAML loading, decoding, the
        // graph checks) and written out of the order they are found in.
        let first = MarkedText("""
            fail_fast: ¹yes
            tasks:
              build:
                run: make
                ²tiemout: 30s
              test:
                needs: [³biuld]
                run: make test
              ⁴a: {run: x, needs: b}
              b: {run: x, needs: a}
              ⁵build: {run: again}

            """)
        let second = MarkedText("""
            tasks:
              deploy:
                run: ./deploy ${{ ¹vars.regoin }}
                timeout: ²soon
            vars: {region: eu}

            """)
        let firstPath = try directory.write(first.text, to: "first.yaml")
        let goodPath = try directory.write(Self.pipeline, to: "good.yaml")
        let secondPath = try directory.write(second.text, to: "second.yaml")

        let run = try FlowrunBinary.run(["validate", firstPath, goodPath, secondPath])
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.diagnostics == [
            "\(firstPath):\(first[1]): error: expected true or false for fail_fast, found 'yes'",
            "\(firstPath):\(first[2]): error: unknown key 'tiemout' in task 'build' (did you mean 'timeout'?)",
            "\(firstPath):\(first[3]): error: unknown name 'biuld' in needs (did you mean 'build'?)",
            "\(firstPath):\(first[4]): error: dependency cycle: a -> b -> a",
            "\(firstPath):\(first[5]): error: duplicate key 'build' (first defined at 3:3)",
            "\(secondPath):\(second[1]): error: unknown variable 'vars.regoin' (did you mean 'region'?); declare it under 'vars:'",
            "\(secondPath):\(second[2]): error: 'soon' is not a duration (expected like 250ms, 30s, 2m, 1h30m or 1.5) in timeout",
        ], "\(run)")
        #expect(run.stdout.contains("\(goodPath): valid"), "\(run)")
        #expect(run.stderr.hasSuffix("7 errors\n"), "\(run)")
    }

    @Test func validateExitsZeroWhenEveryFileIsGood() throws {
        let directory = try TemporaryDirectory()
        let one = try directory.write(Self.pipeline, to: "one.yaml")
        let two = try directory.write("tasks:\n  nap: {sleep: 1s..2s}\n", to: "two.yaml")
        let run = try FlowrunBinary.run(["validate", one, two])
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stderr.isEmpty, "\(run)")
        #expect(run.stdout.contains("\(one): valid") && run.stdout.contains("\(two): valid"), "\(run)")
    }

    @Test func validateExitsTwoWhenOnlyTheLastFileIsBad() throws {
        let directory = try TemporaryDirectory()
        let good = try directory.write(Self.pipeline, to: "good.yaml")
        let bad = try directory.write("tasks:\n  a: {run: x, needs: nowhere}\n", to: "bad.yaml")
        let run = try FlowrunBinary.run(["validate", good, bad])
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.diagnostics == ["\(bad):2:22: error: unknown name 'nowhere' in needs"], "\(run)")
    }

    /// SPEC §7: on a terminal each diagnostic also shows its source line and
    /// a caret under the column — syntax errors from libyaml included.
    @Test(arguments: [
        ("a validation error", "tasks:\n  build: { run: make, ‸tiemout: 5s }\n",
         "unknown key 'tiemout' in task 'build' (did you mean 'timeout'?)", "  build: { run: make, tiemout: 5s }"),
        ("a YAML syntax error", "tasks:\n  build: {run: make‸]\n",
         "did not find expected ',' or '}'", "  build: {run: make]"),
        ("a tab (shown as one space)", "tasks:\n‸\tbuild:\n\t\trun: make\n", "", " build:"),
    ])
    func onATerminalEachDiagnosticShowsItsLineAndACaret(_ name: String, _ marked: String, _ message: String, _ sourceLine: String) throws {
        let directory = try TemporaryDirectory()
        let text = MarkedText(marked)
        let file = try directory.write(text.text, to: "workflow.yaml")
        let run = try FlowrunBinary.run(["validate", file], stderrOnTerminal: true)
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let heading = try #require(lines.firstIndex { $0.hasPrefix("\(file):\(text.position): error: \(message)") }, "\(run)")
        let caret = String(repeating: " ", count: text.column - 1) + "^"
        #expect(Array(lines.dropFirst(heading + 1).prefix(2)) == [sourceLine, caret], "no source line and caret under the diagnostic (\(name))\n\(run)")
    }

    /// An unquoted `${{ }}` in a flow mapping or list: libyaml's "did not
    /// find expected ',' or '}'" gets what to quote, as FORMAT.md says.
    /// Before, only libyaml's words. A quoted `${{` elsewhere gets no hint.
    @Test(arguments: [
        ("tasks:\n  a: { run: echo $‸{{ vars.x }} }\nvars: { x: 1 }\n",
         "a ${{ }} inside { … } must be quoted, because { and } are flow punctuation there: put the whole value in quotes, as in env: { TAG: \"${{ vars.tag }}\" }, or write it in block style (did not find expected ',' or '}' (while parsing a flow mapping))"),
        ("groups:\n  g: { foreach: [a], task: { run: echo, sources: [src/$‸{{ item }}.c] } }\n",
         "a ${{ }} inside [ … ] must be quoted, because { and } are flow punctuation there: put the whole value in quotes, as in sources: [\"src/${{ item }}.c\"], or write it in block style (did not find expected ',' or ']' (while parsing a flow sequence))"),
        ("tasks:\n  a: { run: \"echo ${{ vars.x }}\", needs: [b c ‸}\nvars: { x: 1 }\n",
         "did not find expected ',' or ']' (while parsing a flow sequence)"),
    ])
    func anUnquotedExpressionInAFlowCollectionSaysWhatToQuote(_ marked: String, _ message: String) throws {
        let directory = try TemporaryDirectory()
        let text = MarkedText(marked)
        let file = try directory.write(text.text, to: "flow.yaml")
        let run = try FlowrunBinary.run(["validate", file])
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.diagnostics == ["\(file):\(text.position): error: \(message)"], "\(run)")
    }

    /// `--dry-run` fills in what it already knows — `vars` and flowrun's
    /// own environment — in the workflow's `env:` and a task's `env:` and
    /// `cwd:`, after the template as written; a value only a run has stays
    /// as written, and a secret shows as `***`. Before, `${{ env.X }}` was
    /// shown unresolved everywhere.
    @Test func theDryRunFillsInTheValuesItKnows() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("""
            vars: { mode: fast }
            secrets: [FLOWRUN_TEST_TOKEN]
            env: { WHERE: "${{ env.FLOWRUN_TEST_DIR }}/out", T: "${{ env.FLOWRUN_TEST_TOKEN }}" }
            tasks:
              version: { run: "echo 1" }
              build:
                needs: [version]
                run: make
                env: { MODE: "${{ vars.mode }}-${{ env.FLOWRUN_TEST_DIR }}", V: "${{ tasks.version.stdout }}" }
                cwd: ${{ env.FLOWRUN_TEST_DIR }}
            """, to: "known.yaml")
        let run = try FlowrunBinary.run(
            [file, "--dry-run"], environment: ["FLOWRUN_TEST_DIR": "/srv/app", "FLOWRUN_TEST_TOKEN": "not-for-your-eyes"])
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stdout.contains("  env: WHERE=\"${{ env.FLOWRUN_TEST_DIR }}/out\" → /srv/app/out, T=\"${{ env.FLOWRUN_TEST_TOKEN }}\" → ***\n"), "\(run)")
        #expect(run.stdout.contains("      env:       MODE=\"${{ vars.mode }}-${{ env.FLOWRUN_TEST_DIR }}\" → fast-/srv/app, V=\"${{ tasks.version.stdout }}\"\n"), "\(run)")
        #expect(run.stdout.contains("      cwd:       ${{ env.FLOWRUN_TEST_DIR }} → /srv/app\n"), "\(run)")
        #expect(!run.stdout.contains("not-for-your-eyes"), "\(run)")
    }

    // MARK: options

    @Test func anUndeclaredVarIsAnErrorNamingIt() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(Self.pipeline, to: "pipeline.yaml")
        let run = try FlowrunBinary.run([file, "--dry-run", "--var", "regoin=us"])
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.contains("regoin") && run.stderr.contains("variable"), "\(run)")
        #expect(run.stdout.isEmpty, "no plan after a command-line error\n\(run)")
    }

    @Test func aDeclaredVarIsAccepted() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(Self.pipeline, to: "pipeline.yaml")
        let run = try FlowrunBinary.run([file, "--dry-run", "--var", "region=us"])
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stdout.contains("region=us"), "\(run)")
    }

    @Test func onlyWithAnUnknownNameSuggestsTheNearestOne() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(Self.pipeline, to: "pipeline.yaml")
        let run = try FlowrunBinary.run([file, "--dry-run", "--only", "biuld"])
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.contains("biuld") && run.stderr.contains("did you mean 'build'?"), "\(run)")
    }

    @Test(arguments: [
        ["FILE", "--dry-run", "--bogus"],
        ["FILE", "--dry-run", "--output", "xml"],
        ["FILE", "--dry-run", "--max-parallel", "0"],
        ["FILE", "--dry-run", "--var", "novalue"],
        ["validate", "--bogus", "FILE"],
        ["--bogus"],
        // No FILE is no longer a usage error: it looks for flowrun.yaml
        // (DefaultFileTests covers the exit 2 when there is none).
    ])
    func aBadCommandLineExitsTwo(_ arguments: [String]) throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(Self.pipeline, to: "pipeline.yaml")
        let run = try FlowrunBinary.run(arguments.map { $0 == "FILE" ? file : $0 })
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "a usage error exits 2 (SPEC §7), not ArgumentParser's 64\n\(run)")
        #expect(!run.stderr.isEmpty, "\(run)")
    }

    /// Every flag of SPEC §7, and the subcommands.
    static let documentedFlags = ["--dry-run", "--var", "--max-parallel", "--only", "--fail-fast", "--output", "--log-dir"]

    @Test(arguments: [["--help"], ["-h"]])
    func topLevelHelpMentionsEveryFlag(_ arguments: [String]) throws {
        let run = try FlowrunBinary.run(arguments)
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        for flag in Self.documentedFlags + ["validate"] {
            #expect(run.stdout.contains(flag), "`flowrun \(arguments.joined(separator: " "))` does not mention \(flag)\n\(run)")
        }
    }

    @Test(arguments: [["run", "--help"], ["help", "run"]])
    func runHelpMentionsEveryFlag(_ arguments: [String]) throws {
        let run = try FlowrunBinary.run(arguments)
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        for flag in Self.documentedFlags {
            #expect(run.stdout.contains(flag), "`flowrun \(arguments.joined(separator: " "))` does not mention \(flag)\n\(run)")
        }
    }

    @Test func validateHelpExplainsTheDiagnostics() throws {
        let run = try FlowrunBinary.run(["validate", "--help"])
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stdout.contains("FILE:LINE:COLUMN"), "\(run)")
    }

    // MARK: --dry-run runs nothing

    @Test(arguments: [[], ["--output", "json"], ["--only", "report"], ["--fail-fast", "--max-parallel", "1"]])
    func dryRunExecutesNothing(_ extraArguments: [String]) throws {
        let directory = try TemporaryDirectory()
        let listener = try TCPListener()
        let markers = directory.path + "/markers"
        try FileManager.default.createDirectory(atPath: markers, withIntermediateDirectories: false)
        let file = try directory.write("""
            vars: {port: "\(listener.port)"}
            tasks:
              touch: {run: touch \(markers)/task}
              relative: {run: touch MARKER}
              ping:
                http: {url: "http://127.0.0.1:${{ vars.port }}/ping", method: POST, body: hello}
              report:
                needs: [touch, relative, ping, fanned]
                run: touch \(markers)/report
            groups:
              fanned:
                foreach: [1, 2, 3]
                task: {run: "touch \(markers)/item-${{ item }}"}
            finally:
              cleanup: {run: touch \(markers)/finally}

            """, to: "side-effects.yaml")

        let run = try FlowrunBinary.run([file, "--dry-run"] + extraArguments, in: directory.path)
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stdout.contains("report"), "\(run)")

        let left = try FileManager.default.contentsOfDirectory(atPath: markers)
        #expect(left.isEmpty, "the dry run ran tasks: \(left)")
        let created = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(created == ["markers", "side-effects.yaml"], "a dry run writes nothing (no MARKER, no .flowrun/ run record)")
        #expect(!listener.hasPendingConnection(waiting: .milliseconds(200)), "the dry run connected to the http task's server")
    }

    // MARK: scale

    @Test func aTenThousandTaskWorkflowValidatesAndPlans() throws {
        let directory = try TemporaryDirectory()
        // Ten chains of 1,000 tasks, each task needing its predecessor and
        // every 100th one also needing a task of the previous chain.
        var text = "semaphores: {db: 2}\ntasks:\n"
        for chain in 0..<10 {
            for step in 0..<1000 {
                var needs: [String] = []
                if step > 0 { needs.append("c\(chain)-\(step - 1)") }
                if chain > 0 && step % 100 == 0 { needs.append("c\(chain - 1)-\(step)") }
                text += "  c\(chain)-\(step): {run: \"echo \(chain) \(step)\", timeout: 30s"
                if !needs.isEmpty { text += ", needs: [\(needs.joined(separator: ", "))]" }
                if step % 10 == 0 { text += ", semaphores: [db]" }
                text += "}\n"
            }
        }
        let file = try directory.write(text, to: "ten-thousand.yaml")

        let validate = try FlowrunBinary.run(["validate", file])
        let plan = try FlowrunBinary.run([file, "--dry-run"])
        let json = try FlowrunBinary.run([file, "--dry-run", "--output", "json"])
        for (label, run) in [("validate", validate), ("--dry-run", plan), ("--dry-run --output json", json)] {
            print(resultRow("scale", "10,000 tasks: \(label)", run))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.wallSeconds < 10, "\(label) took \(run.wallMilliseconds) ms\n\(run)")
        }
        #expect(validate.stdout.contains("valid (10000 tasks"), "\(validate)")
        #expect(plan.stdout.contains("c9-999"), "\(plan)")
        let parsed = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect((parsed?["steps"] as? [Any])?.count == 10_000)
    }

    /// 4,000 tasks, each needing a near miss (`task00001` needs `tusk00001`):
    /// a 160 KB file. Finding "did you mean" for each unknown name must not
    /// compare it with every name in the file (4,000 × 4,000 edit distances).
    @Test func manyUnknownNamesTakeLinearTime() throws {
        let directory = try TemporaryDirectory()
        let text = "tasks:\n" + (0..<4000).map { index in
            let number = String(index).count < 5 ? String(repeating: "0", count: 5 - String(index).count) + String(index) : String(index)
            return "  task\(number): {run: x, needs: tusk\(number)}\n"
        }.joined()
        let file = try directory.write(text, to: "near-misses.yaml")
        let run = try FlowrunBinary.run(["validate", file])
        print(resultRow("scale", "4,000 unknown near-miss needs: validate", run))
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.diagnostics.first?.hasSuffix("error: unknown name 'tusk00000' in needs (did you mean 'task00000'?)") == true, "\(run)")
        #expect(run.wallSeconds < 5, "took \(run.wallMilliseconds) ms\n\(run)")
    }
}

/// A TCP listener on 127.0.0.1 at a free port, to prove nobody connects.
final class TCPListener {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let descriptor = socket(AF_INET, stream, 0)
        guard descriptor >= 0 else { throw FlowrunBinaryError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw FlowrunBinaryError("cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }

    /// Whether a connection waits to be accepted (one made and closed still waits).
    func hasPendingConnection(waiting timeout: Duration) -> Bool {
        var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return poll(&request, 1, milliseconds) > 0
    }
}
