import Foundation
import Testing

extension RunEndToEndParallel {
    /// `templates:` with `params:`, called with `uses:`/`with:` (SPEC §10):
    /// each call is an ordinary task in the plan, the run, the record and
    /// the export; bad calls are validation errors at their place.
    @Suite struct RunTemplateTests {
        static let recipe = """
            vars: { suffix: "-v1" }
            templates:
              build:
                params: { os: ~, arch: amd64, level: "2" }
                description: build for ${{ params.os }}/${{ params.arch }}
                env: { ARCH: "${{ params.arch }}", KEEP: template }
                run: echo "os=" ${{ params.os }} "arch=$ARCH" "level=" ${{ params.level }} "keep=$KEEP" "suffix=" ${{ vars.suffix }} > "$SANDBOX"/${{ params.os }}-${{ params.arch }}
                timeout: 5m
                retries: ${{ params.level }}
                needs: [gen]
            tasks:
              gen: { run: "true" }
              other: { run: "true" }
              build-linux: { uses: build, with: { os: linux } }
              build-mac:
                uses: build
                with: { os: darwin, arch: arm64, level: 0 }
                needs: [other]
                timeout: 1m
                env: { KEEP: call }
              after:
                needs: [build-linux, build-mac]
                run: echo ${{ tasks.build-linux.status }} ${{ tasks.build-mac.status }}
            groups:
              matrix:
                foreach: [freebsd, "open bsd"]
                task: { uses: build, with: { os: "${{ item }}", arch: "x-${{ index }}" }, name: "build-${{ index }}" }
            """

        @Test func callsRunAsOrdinaryTasksWithTheirValues() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.recipe)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.read("linux-amd64") == "os= linux arch=amd64 level= 2 keep=template suffix= -v1\n")
            // The call's values and keys win: arm64, level 0, KEEP from the call's env.
            #expect(sandbox.read("darwin-arm64") == "os= darwin arch=arm64 level= 0 keep=call suffix= -v1\n")
            // From a fan-out: item and index through with:, a value with a space kept one word.
            #expect(sandbox.read("freebsd-x-0") == "os= freebsd arch=x-0 level= 2 keep=template suffix= -v1\n")
            #expect(sandbox.read("open bsd-x-1") == "os= open bsd arch=x-1 level= 2 keep=template suffix= -v1\n")
            let record = try sandbox.record()
            for name in ["build-linux", "build-mac", "build-0", "build-1", "after"] {
                #expect(record.status(name) == "succeeded", "\(name): \(record.statuses)")
                #expect(!record.names("task_started").filter { $0 == name }.isEmpty, "\(name) has no task_started event")
            }
            #expect(record.stdout("after") == "succeeded succeeded")
            #expect(run.stdout.contains("ok       build-mac"), "\(run)")
        }

        @Test func theDryRunShowsEachCallResolved() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.recipe)
            let run = try FlowrunBinary.run([workflow, "--dry-run"])
            #expect(run.exitStatus == 0, "\(run)")
            let text = run.stdout
            #expect(text.contains("""
                  build-mac  [task]
                      about:     build for darwin/arm64
                      uses:      build os=darwin, arch=arm64, level=0
                      run:       echo "os=" darwin "arch=$ARCH" "level=" 0 "keep=$KEEP" "suffix=" ${{ v…
                      needs:     other
                """), "\(run)")
            #expect(text.contains("policy:    timeout 1m per attempt"), "\(run)")
            #expect(text.contains("policy:    timeout 5m per attempt · retries 2"), "\(run)")
            #expect(text.contains("env:       ARCH=arm64, KEEP=call"), "\(run)")
            #expect(text.contains("about:     build for ${{ item }}/x-${{ index }}"), "\(run)")
            let json = try FlowrunBinary.run([workflow, "--dry-run", "--output", "json"])
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let steps = try #require(plan["steps"] as? [[String: Any]])
            let linux = try #require(steps.first { $0["name"] as? String == "build-linux" })
            let uses = try #require(linux["uses"] as? [String: Any])
            #expect(uses["template"] as? String == "build")
            #expect(uses["with"] as? [String: String] == ["os": "linux", "arch": "amd64", "level": "2"])
            #expect((linux["action"] as? [String: Any])?["script"] as? String
                == #"echo "os=" linux "arch=$ARCH" "level=" 2 "keep=$KEEP" "suffix=" ${{ vars.suffix }} > "$SANDBOX"/linux-amd64"#)
            #expect(linux["needs"] as? [String] == ["gen"])
        }

        @Test func aValueIsOneShellWordWhateverItHolds() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                templates:
                  say:
                    params: { text: ~ }
                    run: printf '%s|' ${{ params.text }} > "$SANDBOX/said"
                tasks:
                  hostile: { uses: say, with: { text: "a b; touch $SANDBOX/pwned $(touch $SANDBOX/pwned2) 'q'" } }
                """)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.read("said") == "a b; touch $SANDBOX/pwned $(touch $SANDBOX/pwned2) 'q'|")
            #expect(!sandbox.exists("pwned") && !sandbox.exists("pwned2"))
        }

        @Test func parametersFillInKeysThatTakeNoExpressions() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                templates:
                  step:
                    params: { dep: ~, wait: 10s }
                    needs: ["${{ params.dep }}"]
                    timeout: ${{ params.wait }}
                    run: echo "$FLOWRUN_TASK after" ${{ tasks.first.stdout }}
                tasks:
                  first: { run: echo one }
                  second: { uses: step, with: { dep: first, wait: 100ms } }
                """, ["--dry-run"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("needs:     first"), "\(run)")
            #expect(run.stdout.contains("timeout 100ms per attempt"), "\(run)")
        }

        @Test func badCallsAreErrorsAtTheirPlaceWithDidYouMean() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                templates:
                  build:
                    params: { os: ~, arch: amd64 }
                    run: echo ${{ params.oss }}
                    timout: 5m
                  nested:
                    uses: build
                    run: echo
                tasks:
                  a: { uses: build }
                  b: { uses: buidl, with: { os: linux } }
                  c: { uses: build, with: { os: linux, archh: x } }
                  d: { with: { os: linux }, run: echo }
                  e: { uses: a }
                  f: { run: "echo ${{ params.os }}" }
                  g: { uses: build, with: { os: linux }, timeout: 5x }
                  h: { uses: build, with: { os: [linux] } }
                """, to: "bad.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == [
                "\(file):4:19: error: template 'build' has no parameter 'oss' (did you mean 'os'?); it declares os, arch",
                "\(file):5:5: error: unknown key 'timout' in template 'build' (did you mean 'timeout'?)",
                "\(file):7:5: error: template 'nested' cannot use another template: templates do not nest (give it parameters instead)",
                "\(file):10:14: error: template 'build' needs parameter 'os': add it under with:",
                "\(file):11:14: error: unknown template 'buidl' (did you mean 'build'?); the templates are build, nested",
                "\(file):12:40: error: template 'build' has no parameter 'archh' (did you mean 'arch'?); it has os, arch",
                "\(file):13:8: error: with: gives values to a template's parameters: add 'uses: TEMPLATE' (templates are declared under templates:)",
                "\(file):14:14: error: unknown template 'a': 'a' is a task; uses: names an entry of templates:",
                "\(file):15:23: error: 'params.os': parameters can be read only in the keys of a template (under templates:)",
                "\(file):16:51: error: '5x' has an unknown unit 'x' (use ms, s, m or h) in timeout",
                "\(file):17:33: error: the value of parameter 'os' must be a string or a number, found a sequence",
            ], "\(run)")
        }

        /// A required parameter given null (`~`, `null`, nothing) has no
        /// value: an error at the value, not a task run with an empty one.
        /// `""` stays the way to give an empty value.
        @Test func aRequiredParameterGivenNullIsAnError() throws {
            let directory = try TemporaryDirectory()
            let source = MarkedText("""
                templates:
                  build:
                    params: { os: ~ }
                    run: echo ${{ params.os }}
                tasks:
                  a: { uses: build, with: { os: ¹~ } }
                  b: { uses: build, with: { os: ²null } }
                  c:
                    uses: build
                    with:
                      os:³
                  d: { uses: build, with: { os: "" } }
                """)
            let file = try directory.write(source.text, to: "null.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == [
                "\(file):\(source[1]): error: parameter 'os' of template 'build' is required but given null (~): give it a value (\"\" for an empty one)",
                "\(file):\(source[2]): error: parameter 'os' of template 'build' is required but given null (null): give it a value (\"\" for an empty one)",
                "\(file):\(source[3]): error: parameter 'os' of template 'build' is required but given null (nothing after 'os:'): give it a value (\"\" for an empty one)",
            ], "\(run)")
        }

        /// A value that makes a key wrong once filled in is reported at the
        /// call that gave it (its `with:` entry), not at the template's line
        /// every call shares: a static call's unknown semaphore. (A fan-out
        /// call's `${{ item }}` in a semaphore name is a name computed per
        /// member, which `pool-a` can match: valid, SemaphoreFamilyTests.)
        @Test func aWrongValueFromACallIsReportedAtTheCall() throws {
            let directory = try TemporaryDirectory()
            let source = MarkedText("""
                semaphores: { pool-a: 1 }
                templates:
                  work:
                    params: { pid: ~ }
                    semaphores: ["pool-${{ params.pid }}"]
                    run: echo ${{ params.pid }}
                tasks:
                  one: { uses: work, with: { pid: a } }
                  two: { uses: work, with: { pid: ¹b } }
                groups:
                  many:
                    foreach: [a, b]
                    task: { uses: work, with: { pid: "${{ item }}" } }
                """)
            let file = try directory.write(source.text, to: "values.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == [
                "\(file):\(source[1]): error: unknown semaphore 'pool-b' (did you mean 'pool-a'?); declare it under the top-level 'semaphores:'",
            ], "\(run)")
        }

        @Test func aTemplateProblemIsReportedOnceHoweverManyCallsItHas() throws {
            let directory = try TemporaryDirectory()
            let calls = (0..<50).map { "  t\($0): { uses: slow, with: { n: \($0) } }" }.joined(separator: "\n")
            let file = try directory.write("""
                templates:
                  slow:
                    params: { n: ~ }
                    run: sleep ${{ params.n }}
                    retries: lots
                tasks:
                \(calls)
                """, to: "once.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == ["\(file):5:14: error: expected a whole number for retries, found 'lots'"], "\(run)")
        }

        @Test func aCallExportsToArgoAsItsResolvedTask() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write(Self.recipe.replacingOccurrences(of: "$SANDBOX", with: "/tmp"), to: "calls.yaml")
            let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
            #expect(run.exitStatus == 0, "\(run)")
            let documents = try ArgoManifest.documents(run.stdout)
            let workflows = documents.filter { $0["kind"] as? String == "Workflow" }
            try SchemaValidator.validate(workflows, label: file)
            #expect(ArgoManifest.semanticProblems(documents).isEmpty)
            let spec = try #require(workflows.first?["spec"] as? [String: Any])
            let templates = try #require(spec["templates"] as? [[String: Any]])
            let mac = try #require(templates.first { $0["name"] as? String == "build-mac" }, "\(run.stdout)")
            let source = try #require((mac["script"] as? [String: Any])?["source"] as? String)
            #expect(source.contains(#"echo "os=" darwin "arch=$ARCH" "level=" 0 "keep=$KEEP""#), "\(source)")
        }

        @Test func theCrossBuildRecipeBuildsEveryPlatformAndChecksumsThem() throws {
            _ = try RunSandbox.tool("python3")
            let sandbox = try RunSandbox()
            let file = WorkflowsTests.folder + "/cross-build.yaml"
            let run = try FlowrunBinary.run(
                sandbox.arguments(file, []), in: sandbox.path,
                environment: sandbox.environment.merging(["TMPDIR": sandbox.path]) { _, new in new })
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let builds = ["linux-amd64", "linux-arm64", "darwin-arm64", "windows-amd64", "freebsd-amd64", "openbsd-amd64"]
            for name in builds {
                #expect(record.status(name) == "succeeded", "\(name): \(record.statuses)")
                #expect(record.outputs(name)["binary"]?.hasSuffix("/dist/app-" + name) == true, "\(name): \(record.outputs(name))")
            }
            #expect(record.status("checksums") == "succeeded")
            #expect(record.stdout("checksums") == "6 binaries")
            let script = try #require(RunEndToEndParallel.RunInterpreterTests.scriptFile(of: "checksums", in: record))
            #expect(try RunEndToEndParallel.RunInterpreterTests.mode(of: script) == 0o700)
            // `finally` removed the workspace.
            let left = try FileManager.default.contentsOfDirectory(atPath: sandbox.path).filter { $0.hasPrefix("flowrun-cross-build.") }
            #expect(left.isEmpty, "\(left)")
        }

        @Test func aBigTemplateCalledManyTimesIsStoppedNotExpandedWithoutEnd() throws {
            let directory = try TemporaryDirectory()
            // 1 MiB of script with a parameter, called 2,000 times: 2 GiB if expanded.
            let script = "echo " + String(repeating: "x", count: 1 << 20) + " ${{ params.a }}"
            let calls = (0..<2000).map { "  c\($0): { uses: t, with: { a: v\($0) } }" }.joined(separator: "\n")
            let file = try directory.write("templates:\n  t:\n    params: { a: ~ }\n    run: \"\(script)\"\ntasks:\n\(calls)\n", to: "big.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            run.expectNoCrash()
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == [
                "\(file):69:10: error: the template calls up to here fill in more than 64 MiB of text; flowrun stops expanding calls (use env: or a script file for large shared text)",
            ], "\(run)")
            #expect(run.peakRSSMegabytes < 400, "\(run)")
        }
    }
}
