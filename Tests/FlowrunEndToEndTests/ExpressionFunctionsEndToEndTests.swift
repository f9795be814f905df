import Foundation
import Testing

extension RunEndToEndParallel {
    /// Expression functions, `a && b || c` ternaries and host facts through
    /// the real binary (SPEC §15, issue 35): the recipe
    /// `workflows/github-style-ci.yaml` run as its header says, what
    /// `validate`, `--dry-run` and `export` make of calls, and what a value
    /// only the run can know wrong does.
    @Suite struct ExpressionFunctionsEndToEndTests {
        static let recipe = WorkflowsTests.folder + "/github-style-ci.yaml"

        /// `uname -m`, what `host.arch` must give.
        static var machine: String {
            var names = utsname()
            uname(&names)
            return withUnsafeBytes(of: &names.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }

        @Test func theRecipeOnABranchBuildsADevVersionAndPublishesNothing() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(sandbox.arguments(Self.recipe, []), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("github-style-ci-out/log.txt") == [
                "building refs/heads/main on linux/\(Self.machine)",
                "debug build of app-0.0.0-dev-linux-\(Self.machine).tar",
                "platforms: linux/amd64 linux/arm64",
                #"suites: ["unit","integration","lint"]"#,
                "published: no",
                "tests: all passed",
            ], "\(run)")
            let statuses = try sandbox.record().statuses
            #expect(statuses["publish"] == "skipped" && statuses["test-lint"] == "succeeded", "\(statuses)")
            let cpus = ProcessInfo.processInfo.activeProcessorCount
            #expect(sandbox.read("github-style-ci-out/tests/unit.txt") == "suite unit on \(cpus) CPUs\n")
        }

        @Test func theRecipeOnATagBuildsTheReleaseAndSkipsWhatItIsTold() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(
                sandbox.arguments(Self.recipe, ["--var", "ref=refs/tags/v2.0.0", "--var", "skip=lint,docs"]),
                in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("github-style-ci-out/log.txt") == [
                "building refs/tags/v2.0.0 on linux/\(Self.machine)",
                "release build of app-2.0.0-linux-\(Self.machine).tar",
                "published app-2.0.0-linux-\(Self.machine).tar",
                "platforms: linux/amd64 linux/arm64",
                #"suites: ["unit","integration","lint"]"#,
                "published: yes",
                "tests: all passed",
            ], "\(run)")
            let statuses = try sandbox.record().statuses
            #expect(statuses["test-lint"] == "skipped" && statuses["test-unit"] == "succeeded", "\(statuses)")
        }

        /// `--dry-run` evaluates what reads only vars and host facts, in text and JSON.
        @Test func dryRunShowsTheValuesKnownBeforeTheRun() throws {
            let text = try FlowrunBinary.run([Self.recipe, "--dry-run", "--var", "ref=refs/tags/v3.1.0"])
            #expect(text.exitStatus == 0, "\(text)")
            let values = text.stdout.split(separator: "\n").filter { $0.hasPrefix("      value:") }.map(String.init)
            #expect(values.contains(#"      value:     ${{ format('building {0} on {1}/{2}', vars.ref, host.os, host.arch) }} = "building refs/tags/v3.1.0 on linux/\#(Self.machine)""#), "\(text)")
            #expect(values.contains("      value:     ${{ startsWith(vars.ref, 'refs/tags/v') && replace(vars.ref, 'refs/tags/v', '') || '0.0.0-dev' }} = 3.1.0"), "\(text)")
            #expect(values.contains("      value:     ${{ startsWith(vars.ref, 'refs/tags/') }} = true"), "\(text)")
            // A foreach planning can evaluate to an array has its member count.
            #expect(text.stdout.contains("  tests[*]  [fan-out, 3 members]"), "\(text)")
            // What reads a task's output waits for the run.
            #expect(!text.stdout.contains("tasks.version.outputs.version, host.os, host.arch) }} ="), "\(text)")

            let json = try FlowrunBinary.run([Self.recipe, "--dry-run", "--output", "json"])
            #expect(json.exitStatus == 0, "\(json)")
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let steps = try #require(plan["steps"] as? [[String: Any]])
            let build = try #require(steps.first { $0["name"] as? String == "build" })
            #expect(build["values"] as? [[String: String]] == [
                ["expression": "startsWith(vars.ref, 'refs/tags/') && 'release' || 'debug'", "value": "debug"]
            ], "\(build)")
            let tests = try #require(steps.first { $0["name"] as? String == "tests[*]" })
            #expect((tests["fan_out"] as? [String: Any])?["count"] as? Int == 3, "\(tests)")
        }

        @Test func validateNamesAWrongCallAtItsLineAndExitsTwo() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                vars: { v: "1" }
                tasks:
                  a:
                    run: echo ${{ startWith(vars.v, '1') }}
                  b:
                    if: ${{ contains(vars.v) }}
                    run: echo ${{ format('{0}-{1}', vars.v) }}
                """, to: "calls.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == [
                "\(file):4:19: error: unknown function 'startWith()' (did you mean 'startsWith'?); the functions are format, join, contains, startsWith, endsWith, toJSON, fromJSON, replace, split, trim",
                "\(file):6:13: error: contains() takes 2 arguments, found 1: write contains(search, item)",
                "\(file):7:19: error: format(): {1} needs 2 values after the text, found 1",
            ], "\(run)")
        }

        /// Expressions are read in UTF-8 bytes, but positions stay those of
        /// Characters: a two-byte letter before a `${{` counts one column,
        /// and an accent written as a second scalar after a quote joins it
        /// (the string is not closed there), as when both walked Characters.
        @Test func validatePlacesErrorsByCharacterAfterNonASCIIText() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                vars: { v: "1" }
                tasks:
                  a:
                    run: echo é ${{ 'ü' == vars.v @ }} ${{ format('é}', vars.v) }}
                  b:
                    run: echo ü ${{ vars.v }} é ${{ vars.nope }} ${{ 'x'\u{301} == vars.v }}
                """, to: "accents.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == [
                "\(file):4:35: error: unexpected character '@'",
                "\(file):4:44: error: format(): '}' without a '{' before it; write '}}' for a literal brace (at character 2 of its text)",
                "\(file):6:37: error: unknown variable 'vars.nope'; declare it under 'vars:'",
                "\(file):6:54: error: unterminated string (missing ')",
            ], "\(run)")
        }

        /// `fromJSON()` of an output that is not JSON fails that task, naming
        /// the expression; in `if:` too. Nothing else is affected.
        @Test func aValueOnlyTheRunKnowsIsWrongFailsTheTask() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  list: { run: echo "items=not json" >> "$FLOWRUN_OUTPUT" }
                  use:
                    needs: [list]
                    run: echo ${{ join(fromJSON(tasks.list.outputs.items), ' ') }}
                  gate:
                    needs: [list]
                    if: ${{ contains(fromJSON(tasks.list.outputs.items), 'x') }}
                    run: echo never
                  fine:
                    needs: [list]
                    run: echo ${{ contains(tasks.list.outputs.items, 'JSON') && 'found' || 'missing' }} > fine.txt
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let statuses = try sandbox.record().statuses
            #expect(statuses == ["list": "succeeded", "use": "failed", "gate": "failed", "fine": "succeeded"], "\(run)")
            #expect(sandbox.read("fine.txt") == "found\n")
            #expect(run.stdout.contains("workflow.yaml:5:15: ${{ join(fromJSON(tasks.list.outputs.items), ' ') }}: fromJSON(): the value is not JSON: 'not json'"), "\(run)")
        }

        /// `host.cpus` is the affinity mask, not the machine's CPU count.
        @Test func hostCPUsIsWhatThisProcessMayUse() throws {
            let taskset = try RunSandbox.tool("taskset")
            let sandbox = try RunSandbox()
            let outcome = try sandbox.run(wrapped: [taskset, "-c", "0"], """
                tasks:
                  facts:
                    run: echo ${{ host.os }} ${{ host.cpus }} > facts.txt
                """)
            #expect(outcome.exitStatus == 0, "\(sandbox.read("stderr") ?? "")")
            #expect(sandbox.read("facts.txt") == "linux 1\n")
        }

        /// Argo: `format()`, the ternary and text functions are emulated in
        /// its expression language; host facts and JSON functions are refused at their line.
        @Test func exportEmulatesWhatArgoCanAndRefusesTheRest() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                vars: { ref: refs/heads/main, version: "1.0" }
                tasks:
                  a:
                    run: echo ${{ format('v{0}', vars.version) }} ${{ startsWith(vars.ref, 'refs/tags/') && 'release' || 'debug' }}
                """, to: "argo.yaml")
            let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains(#"value: "{{=('v' + workflow['parameters']['version'])}}""#), "\(run.stdout)")
            #expect(run.stdout.contains("sprig.hasPrefix(sprig.lower('refs/tags/'), sprig.lower(workflow['parameters']['ref']))"), "\(run.stdout)")

            let refused = try FlowrunBinary.run(["export", Self.recipe, "--to", "argo"])
            #expect(refused.exitStatus == 2, "\(refused)")
            #expect(refused.diagnostics.contains(
                "\(Self.recipe):26:60: error: cannot export to Argo: 'host.os' is a fact of the machine flowrun runs on; an Argo pod cannot read it (pick the value with a var instead)"),
                "\(refused)")
            #expect(refused.diagnostics.contains(
                "\(Self.recipe):54:14: error: cannot export to Argo: join() works on JSON values, which Argo's expressions do not have; do it in the script instead"),
                "\(refused)")
        }
    }
}
