import Foundation
import Testing

extension RunEndToEndParallel {
    /// Issue 23 item 3 (and item 5's "never rename a member") with the built
    /// binary: `matrix:` with `include`/`exclude`, mapping items and
    /// `item.KEY`, member names, `split:`, the dry run (docs/FORMAT.md
    /// "Matrices and records").
    @Suite struct MatrixTests {
        /// SPEC §10's matrix, run: 2 × 2 − 1 excluded + 1 included = 4 members,
        /// named by their axis values in order, each with its own item; the
        /// include's extra key reads '' where a combination lacks it.
        @Test func aMatrixRunsEveryCombinationNamedByItsValues() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                groups:
                  test:
                    matrix:
                      os: [linux, macos]
                      py: ["3.11", "3.12"]
                      include: [{ os: linux, py: "3.13", experimental: true }]
                      exclude: [{ os: macos, py: "3.11" }]
                    task:
                      env: { PY: "${{ item.py }}" }
                      run: echo ${{ item.os }} "$PY" x${{ item.experimental }} "$FLOWRUN_ITEM"
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let names = record.tasks.compactMap { $0["name"] as? String }
            #expect(names == ["test[os=linux,py=3.11]", "test[os=linux,py=3.12]", "test[os=macos,py=3.12]", "test[os=linux,py=3.13]"], "\(names)")
            #expect(record.stdout("test[os=linux,py=3.11]") == #"linux 3.11 x {"os":"linux","py":"3.11"}"#)
            #expect(record.stdout("test[os=macos,py=3.12]") == #"macos 3.12 x {"os":"macos","py":"3.12"}"#)
            #expect(record.stdout("test[os=linux,py=3.13]") == #"linux 3.13 xtrue {"os":"linux","py":"3.13","experimental":"true"}"#)
            #expect(record.task("test[os=linux,py=3.12]")?["item"] as? String == #"{"os":"linux","py":"3.12"}"#)
        }

        /// An include whose axis values match existing combinations adds its
        /// other keys to each of them (GitHub's rule: a key that is not an
        /// axis is allowed); one that matches none is a combination of its
        /// own, and a later include may replace an earlier one's extra value.
        @Test func anIncludeAddsAKeyToTheCombinationsItMatches() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                groups:
                  build:
                    matrix:
                      os: [linux, macos]
                      arch: [amd64, arm64]
                      include:
                        - { os: linux, cc: gcc }
                        - { os: linux, arch: arm64, cc: clang }
                        - { os: windows, cc: msvc }
                    task:
                      run: echo ${{ item.os }}/${{ item.arch }} cc=${{ item.cc }}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.stdout("build[os=linux,arch=amd64]") == "linux/amd64 cc=gcc", "\(record.overview)")
            #expect(record.stdout("build[os=linux,arch=arm64]") == "linux/arm64 cc=clang")
            #expect(record.stdout("build[os=macos,arch=amd64]") == "macos/amd64 cc=")
            #expect(record.stdout("build[os=windows]") == "windows/ cc=msvc")
            #expect(record.tasks.count == 5, "\(record.overview)")
        }

        /// `--dry-run` lists the expanded matrix, member by member with its
        /// item, and `--output json` gives the same names and items as
        /// objects; the names are the ones the run uses.
        @Test func theDryRunShowsTheExpandedMatrix() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                groups:
                  test:
                    matrix:
                      os: [linux, macos]
                      py: ["3.11", "3.12"]
                      include: [{ os: linux, py: "3.13", experimental: true }]
                      exclude: [{ os: macos, py: "3.11" }]
                    task:
                      run: echo ${{ item.os }}
                """)
            let text = try FlowrunBinary.run([workflow, "--dry-run"])
            #expect(text.exitStatus == 0, "\(text)")
            #expect(text.stdout.contains("""
                      foreach:   matrix os × py, 4 combinations
                      members:   test[os=linux,py=3.11]  {os: linux, py: 3.11}
                                 test[os=linux,py=3.12]  {os: linux, py: 3.12}
                                 test[os=macos,py=3.12]  {os: macos, py: 3.12}
                                 test[os=linux,py=3.13]  {os: linux, py: 3.13, experimental: true}
                """), "\(text.stdout)")
            let json = try FlowrunBinary.run([workflow, "--dry-run", "--output", "json"])
            #expect(json.exitStatus == 0, "\(json)")
            let plan = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let steps = plan["steps"] as? [[String: Any]] ?? []
            let fanOut = try #require(steps.first { $0["kind"] as? String == "fan-out" }?["fan_out"] as? [String: Any], "\(json.stdout)")
            #expect(fanOut["source"] as? String == "matrix")
            #expect(fanOut["axes"] as? [String] == ["os", "py"])
            let members = fanOut["members"] as? [[String: Any]] ?? []
            #expect(members.compactMap { $0["name"] as? String } == ["test[os=linux,py=3.11]", "test[os=linux,py=3.12]", "test[os=macos,py=3.12]", "test[os=linux,py=3.13]"])
            #expect(members.last?["item"] as? [String: String] == ["os": "linux", "py": "3.13", "experimental": "true"])
        }

        /// Bad matrices, each with its line:column and, where a name is
        /// close, did-you-mean. An exclude that matches nothing is an error
        /// (GitHub ignores it, hiding the typo); so is an include that adds
        /// nothing, and an include key that is a near miss of an axis.
        @Test func badMatricesAreValidationErrors() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                groups:
                  test:
                    matrix:
                      os: [linux, macos, linux]
                      python: ["3.11", "3.12"]
                      empty: []
                      include:
                        - { os: linux, pyhton: "3.13" }
                        - { os: linux, python: "3.12" }
                      exclude:
                        - { os: macOS }
                        - { oss: linux }
                        - { os: macos, python: "3.11" }
                        - { os: macos, python: "3.11" }
                    task:
                      run: echo ${{ item.osx }}
                  both:
                    foreach: [a]
                    matrix: { a: [1] }
                    task: { run: echo }
                  huge:
                    matrix: { a: [1,2,3,4,5,6,7,8,9,10], b: [1,2,3,4,5,6,7,8,9,10], c: [1,2,3,4,5,6,7,8,9,10], d: [1,2,3,4,5,6,7,8,9,10], e: [1,2,3,4,5,6,7,8,9,10], f: [1,2,3,4,5,6,7,8,9,10] }
                    task: { run: echo }
                  text:
                    foreach: [a, b]
                    task: { run: "echo ${{ item.name }}" }
                """)
            let run = try FlowrunBinary.run(["validate", workflow])
            run.expectNoCrash()
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.components(separatedBy: "\n").filter { !$0.isEmpty } == [
                "\(workflow):4:26: error: 'linux' is listed twice in matrix axis 'os' (first at 4:12)",
                "\(workflow):6:14: error: matrix axis 'empty' has no values, so the matrix would have no combinations",
                "\(workflow):8:24: error: include adds the key 'pyhton', which is not an axis (did you mean 'python'?); keys that are not axes add a value to every combination the include matches",
                "\(workflow):9:11: error: this include matches a combination the matrix already has and adds nothing to it",
                "\(workflow):11:17: error: exclude: 'macOS' is not a value of axis 'os' (did you mean 'macos'?); its values are linux, macos",
                "\(workflow):12:13: error: exclude names 'oss', which is not an axis of this matrix (did you mean 'os'?); the axes are os, python",
                "\(workflow):14:11: error: this exclude matches no combination: an earlier exclude already removed every combination it names",
                "\(workflow):16:21: error: no item of group 'test' has the field 'osx' (did you mean 'os'?); the items have os, python",
                "\(workflow):19:5: error: group 'both' has both foreach and matrix: a matrix is the list of items; keep one of them",
                "\(workflow):22:13: error: the matrix has more than 100,000 combinations (10 × 10 × 10 × 10 × 10 × 10)",
                "\(workflow):26:28: error: 'item.name' reads a field, but the items of group 'text' are text; write them as mappings ({os: linux}) or use a matrix",
                "11 errors",
            ], "\(run)")
        }

        /// Mapping items in a literal `foreach`: names from their scalar
        /// fields (nested records as `k.sub=v`), `item.KEY` and `item.a.b` in
        /// run, env, cwd and if; a field one item lacks reads ''.
        @Test func literalMappingItemsAreRecords() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("eu"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: sandbox.file("us"), withIntermediateDirectories: true)
            let run = try sandbox.run("""
                groups:
                  deploy:
                    foreach:
                      - { service: api, at: { region: eu, zone: 1 }, canary: yes }
                      - { service: web, at: { region: us, zone: 2 } }
                    task:
                      cwd: \(sandbox.path)/${{ item.at.region }}
                      env: { ZONE: "${{ item.at.zone }}" }
                      if: ${{ item.service != 'none' }}
                      run: echo ${{ item.service }} "$(basename "$PWD")" "$ZONE" c=${{ item.canary }}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.stdout("deploy[service=api,at.region=eu,at.zone=1,canary=yes]") == "api eu 1 c=yes", "\(record.overview)")
            #expect(record.stdout("deploy[service=web,at.region=us,at.zone=2]") == "web us 2 c=", "\(record.overview)")
        }

        /// A JSON array of objects from a task's stdout: `item.KEY` in the
        /// script, `name:` and `env`, nested `item.a.b`, a non-string value as
        /// written; members without `name:` are GROUP[INDEX]. A field no item
        /// has fails that group before any member starts, with the field, its
        /// place and the fields the items have; the other group runs.
        @Test func runTimeObjectsAreRecordsAndAnUnknownFieldFailsTheGroup() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  list:
                    run: echo '[{"name":"api","port":80,"meta":{"region":"eu"}},{"name":"web","port":443,"meta":{"region":"us"}}]'
                groups:
                  deploy:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      name: deploy-${{ item.name }}
                      env: { PORT: "${{ item.port }}" }
                      run: echo ${{ item.name }} "$PORT" ${{ item.meta.region }} ${{ item.meta }}
                  plain:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task: { run: "echo ${{ item.port }}" }
                  typo:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      run: echo ${{ item.nmae }}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.stdout("deploy-api") == #"api 80 eu {"region":"eu"}"#, "\(record.overview)")
            #expect(record.stdout("deploy-web") == #"web 443 us {"region":"us"}"#)
            #expect(record.stdout("plain[0]") == "80")
            #expect(record.stdout("plain[1]") == "443")
            let typo = record.events("group_finished").first { $0["group"] as? String == "typo" }
            #expect(typo?["status"] as? String == "failed")
            let reason = "foreach: no item has the field 'nmae' that ${{ item.nmae }} reads (\(sandbox.path)/workflow.yaml:20:21); the items' fields are name, port, meta"
            #expect(typo?["reason"] as? String == reason, "\(typo ?? [:])")
            #expect(run.stdout.contains("group    typo failed (0/0 succeeded, 0.0s): \(reason)"), "\(run.stdout)")
        }

        /// Member names are never renamed (no `~2`): names that two members,
        /// or a member and a task, or two fan-outs would share are validation
        /// errors when they are known before the run.
        @Test func collidingStaticNamesAreValidationErrors() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  fetch-b: { run: echo }
                groups:
                  same:
                    foreach: [{ a: 1 }, { a: 1 }]
                    task: { run: echo }
                  fetch:
                    foreach: [a, b]
                    task: { name: "fetch-${{ item }}", run: echo }
                  one:
                    foreach: [x, y]
                    task: { name: "get-${{ item }}", run: echo }
                  two:
                    foreach: [y, z]
                    task: { name: "get-${{ item }}", run: echo }
                """)
            let run = try FlowrunBinary.run(["validate", workflow])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.components(separatedBy: "\n").filter { !$0.isEmpty } == [
                "\(workflow):5:5: error: members 0 and 1 of group 'same' would both be named 'same[a=1]'; member names must be unique: add a name: to the task that tells them apart (e.g. with ${{ index }})",
                "\(workflow):9:19: error: member 1 of group 'fetch' would be named 'fetch-b', which is already the name of the task at 2:3; member names must differ from every other name",
                "\(workflow):15:19: error: member 0 of group 'two' would be named 'get-y', which is already the name of member 1 of group 'one'; member names must differ from every other name",
                "3 errors",
            ], "\(run)")
        }

        /// Names known only at run time: a duplicate fails its group before
        /// any member runs, naming both items; a name another fan-out's member
        /// already has fails the later group. No member is renamed.
        @Test func collidingRunTimeNamesFailTheGroup() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  list: { run: printf 'a\\nb\\na\\n' }
                  other: { run: printf 'b\\nc\\n' }
                groups:
                  dup:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task: { name: "fetch-${{ item }}", run: touch "$SANDBOX/ran-$FLOWRUN_TASK" }
                  first:
                    needs: [other]
                    foreach: ${{ tasks.other.stdout }}
                    task: { name: "get-${{ item }}", run: echo }
                  second:
                    needs: [first, list]
                    foreach: ${{ tasks.list.stdout }}
                    task: { name: "get-${{ index }}${{ item }}", run: echo }
                  third:
                    needs: [first]
                    foreach: ${{ tasks.other.stdout }}
                    task: { name: "get-${{ item }}", run: echo }
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            let groups = Dictionary(uniqueKeysWithValues: record.events("group_finished").compactMap { event in
                (event["group"] as? String).map { ($0, event) }
            })
            #expect(groups["dup"]?["reason"] as? String == "foreach: items 0 and 2 would both be named 'fetch-a'; member names must differ: give the task a name: that tells them apart (for example with ${{ index }})")
            #expect(groups["third"]?["reason"] as? String == "foreach: item 0 would be named 'get-b', which is already the name of a member of group 'first'; member names must differ from every other name")
            #expect(groups["first"]?["status"] as? String == "succeeded")
            #expect(groups["second"]?["status"] as? String == "succeeded")
            let names = record.tasks.compactMap { $0["name"] as? String }
            #expect(!names.contains { $0.contains("~") }, "\(names)")
            #expect(!sandbox.exists("ran-fetch-a") && !sandbox.exists("ran-fetch-b"), "a member of the failed group ran")
        }

        /// Names are checked across fan-outs by 64-bit hashes first, then
        /// compared whole: two different names with the same hash are not a
        /// collision. `bf13eaba83dea434` and `b3b828bb3655e2a7` have the same
        /// FNV-1a hash (found with a Brent cycle search over 16-hex-digit
        /// strings); before, the second group failed as if its member's name were taken.
        @Test func differentNamesWithTheSameHashAreNotACollision() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  one: { run: echo bf13eaba83dea434 }
                  two: { run: echo b3b828bb3655e2a7 }
                groups:
                  first:
                    needs: [one]
                    foreach: ${{ tasks.one.stdout }}
                    task: { name: "${{ item }}", run: touch "$SANDBOX/ran-$FLOWRUN_TASK" }
                  second:
                    needs: [first, two]
                    foreach: ${{ tasks.two.stdout }}
                    task: { name: "${{ item }}", run: touch "$SANDBOX/ran-$FLOWRUN_TASK" }
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.exists("ran-bf13eaba83dea434") && sandbox.exists("ran-b3b828bb3655e2a7"), "\(run)")
        }

        /// `split:` reads a string as a list: a literal, a computed value,
        /// whitespace, lines and a separator; an unsplit spaced literal is an
        /// error pointing at `split: whitespace`, an unsplit spaced variable a warning.
        @Test func splitReadsAStringAsAList() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  words: { run: printf 'jaeger  mongodb\\tpostgres\\n' }
                  rows: { run: "echo '[1, 2]'" }
                groups:
                  literal:
                    foreach: jaeger mongodb postgres
                    split: whitespace
                    task: { name: "lit-${{ item }}", run: "echo ${{ item }}" }
                  computed:
                    needs: [words]
                    foreach: ${{ tasks.words.stdout }}
                    split: whitespace
                    task: { name: "svc-${{ item }}", run: "echo ${{ item }}" }
                  lines:
                    needs: [rows]
                    foreach: ${{ tasks.rows.stdout }}
                    split: lines
                    task: { run: "echo ${{ item }}" }
                  csv:
                    foreach: "a, b ,,c"
                    split: ","
                    task: { name: "csv-${{ item }}", run: "echo ${{ item }}" }
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            for name in ["lit-jaeger", "lit-mongodb", "lit-postgres", "svc-jaeger", "svc-mongodb", "svc-postgres", "csv-a", "csv-b", "csv-c"] {
                #expect(record.status(name) == "succeeded", "\(name): \(record.overview)")
            }
            // One line that is a JSON array: one item with `split: lines`, where a bare foreach reads two.
            #expect(record.stdout("lines[0]") == "[1, 2]", "\(record.overview)")
            let expectedCount = 2 + 3 + 3 + 1 + 3
            #expect(record.tasks.count == expectedCount, "\(record.overview)")

            let bad = try sandbox.write(workflow: """
                vars: { services: jaeger mongodb postgres }
                groups:
                  words:
                    foreach: jaeger mongodb postgres
                    task: { run: "echo ${{ item }}" }
                  svc:
                    foreach: ${{ vars.services }}
                    task: { run: "echo ${{ item }}" }
                  nothing:
                    foreach: [a]
                    split: ","
                    task: { run: "echo ${{ item }}" }
                """, to: "bad.yaml")
            let validation = try FlowrunBinary.run(["validate", bad])
            #expect(validation.exitStatus == 2, "\(validation)")
            #expect(validation.stderr.components(separatedBy: "\n").filter { !$0.isEmpty } == [
                "\(bad):4:14: error: foreach takes a list, {range: [FIRST, LAST]} or a ${{ }} expression, found 'jaeger mongodb postgres'; to read it as the 3 items jaeger, mongodb, postgres add 'split: whitespace'",
                "\(bad):7:5: warning: foreach reads 'vars.services' ('jaeger mongodb postgres') as one item per line, so as 1 item; add 'split: whitespace' to read its 3 words as items",
                "\(bad):11:5: error: split reads a foreach string as a list, but this foreach is a sequence already",
                "2 errors, 1 warning",
            ], "\(validation)")
        }

        // MARK: - The recipes in workflows/

        /// workflows/compress-matrix.yaml runs: the 6 combinations its header
        /// promises, each a real round trip through gzip or xz with the
        /// include's `ext`, each stashing its size.
        @Test func theCompressMatrixRecipeRunsEveryCombination() throws {
            _ = try RunSandbox.tool("gzip")
            _ = try RunSandbox.tool("xz")
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(
                sandbox.arguments(WorkflowsTests.folder + "/compress-matrix.yaml", []), in: sandbox.path,
                environment: sandbox.environment.merging(["TMPDIR": sandbox.path]) { _, new in new }, timeout: .seconds(60))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let members = ["gzip,level=1", "gzip,level=6", "gzip,level=9", "xz,level=1", "xz,level=6", "xz,level=0"].map { "compress[tool=\($0)]" }
            #expect(record.tasks.compactMap { $0["name"] as? String }.filter { $0.hasPrefix("compress[") } == members, "\(record.overview)")
            for member in members {
                #expect(record.status(member) == "succeeded", "\(member): \(record.overview)")
                #expect(Int(record.outputs(member)["bytes"] ?? "") ?? 0 > 1000, "\(member): \(record.outputs(member))")
            }
            #expect(record.task(members[5])?["item"] as? String == #"{"tool":"xz","level":"0","ext":"xz"}"#)
            #expect(record.status("report") == "succeeded")
        }

        /// workflows/nested-fan-out.yaml: the two-axis matrix is the nested
        /// loop known up front (2 regions × 3 shards), and the run-time pairs
        /// are the nested loop whose inner list depends on the outer item
        /// (eu 2, us 3, ap 1 shards) — every pair once, named by it.
        @Test func theNestedFanOutRecipeRunsEveryPairOnce() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(
                sandbox.arguments(WorkflowsTests.folder + "/nested-fan-out.yaml", []), in: sandbox.path, environment: sandbox.environment)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let names = record.tasks.compactMap { $0["name"] as? String }
            let backups = ["eu", "us"].flatMap { region in ["1", "2", "3"].map { "backup[region=\(region),shard=\($0)]" } }
            #expect(names.filter { $0.hasPrefix("backup[") } == backups, "\(names)")
            #expect(record.stdout("backup[region=us,shard=2]") == "backing up shard 2 of us")
            let restores = ["eu-1", "eu-2", "us-1", "us-2", "us-3", "ap-1"].map { "restore-" + $0 }
            #expect(names.filter { $0.hasPrefix("restore-") } == restores, "\(names)")
            #expect(record.stdout("restore-ap-1") == "restoring shard 1 of ap into a scratch database")
            #expect(record.statuses.values.allSatisfy { $0 == "succeeded" }, "\(record.overview)")
        }

        /// `flowrun export --to argo` of a matrix: withItems of objects, one
        /// per combination — `{index, item, flowrun_name, KEY…}` — that
        /// `{{item.KEY}}` reads, valid against Argo's schema; `item.a.b`,
        /// which Argo cannot read from an item, is refused at its place.
        @Test func theArgoExportOfAMatrixIsWithItemsOfObjects() throws {
            let run = try FlowrunBinary.run(["export", WorkflowsTests.folder + "/compress-matrix.yaml", "--to", "argo"])
            #expect(run.exitStatus == 0, "\(run)")
            let documents = try ArgoManifest.documents(run.stdout)
            let workflows = documents.filter { $0["kind"] as? String == "Workflow" || $0["kind"] as? String == "WorkflowTemplate" }
            try SchemaValidator.validate(workflows, label: "compress-matrix")
            #expect(run.stdout.contains("value: \"{{item.tool}}\""), "\(run.stdout)")
            #expect(run.stdout.contains("value: \"{{item.flowrun_name}}\""), "\(run.stdout)")
            let spec = workflows.first?["spec"] as? [String: Any]
            let templates = spec?["templates"] as? [[String: Any]] ?? []
            let dagTasks = templates.flatMap { ($0["dag"] as? [String: Any])?["tasks"] as? [[String: Any]] ?? [] }
            let items = try #require(dagTasks.compactMap { $0["withItems"] as? [[String: Any]] }.first, "\(run.stdout)")
            #expect(items.count == 6)
            #expect(items.first as? [String: String] == [
                "index": "0", "item": #"{"tool":"gzip","level":"1","ext":"gz"}"#, "flowrun_name": "compress[tool=gzip,level=1]",
                "tool": "gzip", "level": "1", "ext": "gz",
            ])

            let directory = try TemporaryDirectory()
            let nested = try directory.write("""
                groups:
                  deploy:
                    foreach: [{ at: { region: eu } }]
                    task: { run: "echo ${{ item.at.region }}" }
                """, to: "nested.yaml")
            // A nested field read is a key of its own: Argo reads one level of keys.
            let nestedRun = try FlowrunBinary.run(["export", nested, "--to", "argo"])
            #expect(nestedRun.exitStatus == 0, "\(nestedRun)")
            #expect(nestedRun.stdout.contains("value: \"{{item.at.region}}\""), "\(nestedRun.stdout)")
            #expect(nestedRun.stdout.contains("at.region: eu"), "\(nestedRun.stdout)")
        }

        /// A hostile matrix cannot stall validation: 100,000 combinations
        /// validate, but 11 includes matched against all of them (1.1 million
        /// pairs) are refused at the matrix, in well under the time limit.
        @Test func includeAndExcludeWorkIsBounded() throws {
            let directory = try TemporaryDirectory()
            let a = (0..<1000).map(String.init).joined(separator: ", ")
            let b = (0..<100).map(String.init).joined(separator: ", ")
            let includes = (0..<11).map { "        - { a: \"\($0)\", extra: x\($0) }" }.joined(separator: "\n")
            let file = try directory.write("""
                groups:
                  g:
                    matrix:
                      a: [\(a)]
                      b: [\(b)]
                      include:
                \(includes)
                    task: { run: echo }
                """, to: "big.yaml")
            let run = try FlowrunBinary.run(["validate", file], timeout: .seconds(60))
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == [
                "\(file):4:7: error: the matrix's 11 include and exclude entries against its 100,000 combinations are too many to match (at most 1,000,000 pairs)"
            ], "\(run)")
        }
    }
}
