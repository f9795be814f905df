import Foundation
import Testing

extension RunEndToEndParallel {
    /// Semaphore families (SPEC §15, issue 35): `"batch-*": 2` declares a
    /// pool of 2 per matching name, and `semaphores: ["batch-${{ item.batch }}"]`
    /// on a fan-out member takes its outer item's pool at run time — Argo's
    /// nested `parallelism`, without unrolling the outer loop.
    @Suite struct SemaphoreFamilyTests {
        /// Each member leaves a marker while it runs and notes how many of its
        /// pool's markers it sees; the first two of each pool hold until the
        /// test has seen both third members wait for their pool (`task_waiting`)
        /// and four members running at once (two pools side by side).
        @Test func atMostNOfOnePoolRunAtOnceWhileDifferentPoolsRunTogether() throws {
            let sandbox = try RunSandbox()
            let live = try sandbox.start("""
                max_parallel: 8
                semaphores: { "batch-*": 2 }
                groups:
                  work:
                    matrix: { batch: [a, b], n: ["1", "2", "3"] }
                    task:
                      semaphores: ["batch-${{ item.batch }}"]
                      env: { B: "${{ item.batch }}", N: "${{ item.n }}" }
                      run: |
                        touch "$SANDBOX/running-$B-$N"
                        ls "$SANDBOX" | grep -c "^running-$B-" >> "$SANDBOX/seen-$B"
                        echo "$B$N" >> "$SANDBOX/started"
                        while [ ! -e "$SANDBOX/go" ]; do sleep 0.02; done
                        rm "$SANDBOX/running-$B-$N"
                """, hardTimeout: .seconds(120))
            let waitingBoth = poll(until: .seconds(60)) { Self.count("task_waiting", in: sandbox) >= 2 }
            let startedFirst = sandbox.waitFor("started", lines: 4, timeout: .seconds(60))
            let firstWave = Set(sandbox.lines("started"))
            _ = FileManager.default.createFile(atPath: sandbox.file("go"), contents: nil)
            let ended = live.finish()
            #expect(waitingBoth && startedFirst, "\(ended)")
            #expect(firstWave == ["a1", "a2", "b1", "b2"], "\(ended)")
            #expect(ended.exitStatus == 0, "\(ended)")
            for pool in ["a", "b"] {
                let seen = sandbox.lines("seen-" + pool).compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                #expect(seen.count == 3 && seen.allSatisfy { $0 <= 2 } && seen.contains(2), "pool batch-\(pool) saw \(seen)")
            }
            let record = try sandbox.record()
            let waits = record.events("task_waiting")
            #expect(waits.compactMap { $0["task"] as? String }.sorted() == ["work[batch=a,n=3]", "work[batch=b,n=3]"], "\(record.overview)")
            let waitingOn = waits.compactMap { ($0["waiting_on"] as? [String])?.first }
            #expect(waitingOn.count == 2 && waitingOn.allSatisfy { $0.hasPrefix("semaphore batch-") && $0.contains(" 2/2 held by ") }, "\(waitingOn)")
            let started = record.events("task_started", task: "work[batch=b,n=3]").first
            let semaphores = (started?["limits"] as? [String: Any])?["semaphores"] as? [[String: Any]]
            #expect(semaphores?.first?["name"] as? String == "batch-b" && semaphores?.first?["capacity"] as? Int == 2, "\(String(describing: started))")
        }

        /// Many members of one outer item wait for its pool, more than the
        /// fan-out makes ahead of its run slots (4 + 16 here): they do not
        /// hold the fan-out back, so the next item's members are made and
        /// take their own pool while the first item's pool is full.
        @Test func membersWaitingForTheirPoolDoNotHoldBackTheNextPool() throws {
            let sandbox = try RunSandbox()
            let live = try sandbox.start("""
                max_parallel: 4
                semaphores: { "batch-*": 2 }
                groups:
                  work:
                    foreach: { range: [0, 79] }
                    task:
                      semaphores: ["batch-${{ item < 40 && 'a' || 'b' }}"]
                      env: { N: "${{ item }}" }
                      run: |
                        echo "$N" >> "$SANDBOX/started"
                        while [ ! -e "$SANDBOX/go" ]; do sleep 0.02; done
                """, hardTimeout: .seconds(180))
            let bothPools = poll(until: .seconds(60)) {
                let started = sandbox.lines("started").compactMap { Int($0) }
                return started.filter { $0 < 40 }.count >= 2 && started.contains { $0 >= 40 }
            }
            let firstWave = sandbox.lines("started")
            _ = FileManager.default.createFile(atPath: sandbox.file("go"), contents: nil)
            let ended = live.finish()
            #expect(bothPools, "only \(firstWave) started while the first pool was full: \(ended)")
            #expect(ended.exitStatus == 0, "\(ended)")
            #expect(sandbox.lines("started").count == 80, "\(ended)")
        }

        private static func count(_ kind: String, in sandbox: RunSandbox) -> Int {
            let runs = (try? FileManager.default.contentsOfDirectory(atPath: sandbox.logDirectory)) ?? []
            return runs.reduce(0) { total, run in
                let text = ProcessProbe.text(sandbox.logDirectory + "/" + run + "/events.jsonl") ?? ""
                return total + text.components(separatedBy: "\"event\":\"\(kind)\"").count - 1
            }
        }

        /// A name declared without `*` wins over a family that matches it; a
        /// task's static name of a family's pool shares that pool with the
        /// members that compute the same name.
        @Test func aLiteralNameWinsOverAFamilyAndStaticNamesShareTheFamilysPools() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                semaphores: { "db-*": 3, db-main: 1 }
                tasks:
                  migrate: { run: "true", semaphores: [db-main] }
                  report: { run: "true", semaphores: { db-eu: 2 } }
                groups:
                  load:
                    foreach: [main, eu]
                    task: { run: "true", semaphores: ["db-${{ item }}"] }
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            func pool(_ task: String) -> [String] {
                let limits = record.events("task_started", task: task).first?["limits"] as? [String: Any]
                return (limits?["semaphores"] as? [[String: Any]] ?? []).map { "\($0["name"] ?? "")/\($0["weight"] ?? "")/\($0["capacity"] ?? "")" }
            }
            #expect(pool("migrate") == ["db-main/1/1"])
            #expect(pool("load[0]") == ["db-main/1/1"])
            #expect(pool("report") == ["db-eu/2/3"])
            #expect(pool("load[1]") == ["db-eu/1/3"])
        }

        /// A template call passes the pool's name as a parameter: a static
        /// call's is checked before the run, a fan-out call's `${{ item }}`
        /// picks the member's pool at run time.
        @Test func aTemplateCallPicksItsPoolThroughAParameter() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                semaphores: { "shard-*": 1 }
                templates:
                  load:
                    params: { shard: ~ }
                    semaphores: ["shard-${{ params.shard }}"]
                    run: echo loading ${{ params.shard }}
                tasks:
                  first: { uses: load, with: { shard: x } }
                groups:
                  all:
                    foreach: [x, y]
                    task: { uses: load, with: { shard: "${{ item }}" } }
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            func pools(_ task: String) -> [String] {
                let limits = record.events("task_started", task: task).first?["limits"] as? [String: Any]
                return (limits?["semaphores"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            }
            #expect(pools("first") == ["shard-x"], "\(record.overview)")
            #expect(pools("all[0]") == ["shard-x"], "\(record.overview)")
            #expect(pools("all[1]") == ["shard-y"], "\(record.overview)")
        }

        /// A computed name that matches no pool fails that member, saying
        /// why; the other members run.
        @Test func aComputedNameThatMatchesNoPoolFailsItsMemberSayingWhy() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                semaphores: { db: 1 }
                groups:
                  work:
                    foreach: [db, cache]
                    task: { run: "true", semaphores: ["${{ item }}"] }
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["work[0]": "succeeded", "work[1]": "failed"], "\(record.overview)")
            let reason = "semaphores: '${{ item }}' is 'cache', which matches no declared semaphore or family; declare it, or a family like '*', under the top-level 'semaphores:'"
            #expect(run.stdout.contains("FAILED   work[1] (\(reason))"), "\(run)")
        }

        /// Mistakes found before anything runs, each at its line: a static
        /// name no pool matches, a computed one no pool can match, families
        /// that overlap, a weight no pool of the family can hold.
        @Test func mistakesAreValidationErrorsAtTheirLines() throws {
            let directory = try TemporaryDirectory()
            let source = MarkedText("""
                semaphores:
                  "batch-*": 2
                  ¹"batch-gpu-*": 1
                tasks:
                  one: { run: "true", semaphores: [²batch] }
                  two: { run: "true", semaphores: [³"bacth-${{ vars.x }}"] }
                  three: { run: "true", semaphores: { ⁴"batch-${{ vars.x }}": 3 } }
                vars: { x: q }
                """)
            let file = try directory.write(source.text, to: "families.yaml")
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.diagnostics == [
                "\(file):\(source[1]): error: semaphore family 'batch-gpu-*' overlaps 'batch-*' (line 2): some names match both, so their pool would be ambiguous; narrow one so that no name matches both (a name declared without '*' wins over any family)",
                "\(file):\(source[2]): error: unknown semaphore 'batch'; declare it under the top-level 'semaphores:'",
                "\(file):\(source[3]): error: semaphore 'bacth-${{ vars.x }}' can match no declared semaphore or family (did you mean 'batch-*'?); declare a family like 'bacth-*' under the top-level 'semaphores:'",
                "\(file):\(source[4]): error: 'three' takes 3 of semaphore 'batch-${{ vars.x }}', whose pools hold at most 2: it could never run",
            ], "\(run)")
        }

        /// The dry run names the family and, where the items are known, the
        /// pools the members take; the run-time ones are said to be so.
        @Test func theDryRunShowsTheFamilyAndThePools() throws {
            let run = try FlowrunBinary.run([WorkflowsTests.folder + "/nested-fan-out.yaml", "--dry-run"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("semaphore family region-*: capacity 2 per pool, used by backup[*], restore-test[*]"), "\(run.stdout)")
            #expect(run.stdout.contains("+ region-${{ item.region }} 1/2 (family region-*; pools region-eu, region-us)"), "\(run.stdout)")
            #expect(run.stdout.contains("+ region-${{ item.region }} 1/2 (family region-*; pool named at run time)"), "\(run.stdout)")
            let json = try FlowrunBinary.run([WorkflowsTests.folder + "/nested-fan-out.yaml", "--dry-run", "--output", "json"])
            #expect(json.stdout.contains(#""pools":["region-eu","region-us"]"#) || json.stdout.contains(#""pools" : ["#), "\(json.stdout)")
        }

        /// The recipe runs every pair, each member holding its region's pool.
        @Test func theNestedFanOutRecipeHoldsOnePoolPerRegion() throws {
            let sandbox = try RunSandbox()
            let run = try FlowrunBinary.run(
                sandbox.arguments(WorkflowsTests.folder + "/nested-fan-out.yaml", []), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            for (task, pool) in [("backup[region=us,shard=2]", "region-us"), ("restore-ap-1", "region-ap"), ("restore-eu-2", "region-eu")] {
                let limits = record.events("task_started", task: task).first?["limits"] as? [String: Any]
                let names = (limits?["semaphores"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
                #expect(names == [pool], "\(task): \(String(describing: limits))")
            }
        }

        /// Argo has no pool per member: a computed name's members share one
        /// ConfigMap key of the family's capacity (never more per pool, fewer
        /// side by side), with a warning at its line; a family's pool named
        /// statically becomes a key of its own.
        @Test func theArgoExportSharesOneKeyPerComputedNameAndKeysStaticPools() throws {
            let shared = try FlowrunBinary.run(["export", WorkflowsTests.folder + "/nested-fan-out.yaml", "--to", "argo"])
            #expect(shared.exitStatus == 0, "\(shared)")
            #expect(shared.stderr.contains("nested-fan-out.yaml:47:20: warning: emulated on Argo: Argo has no pool per member: every member of 'region-${{ item.region }}' shares one pool of 2 on Argo"), "\(shared)")
            #expect(shared.stdout.contains("region-x.shared: \"2\""), "\(shared.stdout)")
            #expect(shared.stdout.components(separatedBy: "key: region-x.shared").count == 3, "both fan-outs hold it: \(shared.stdout)")
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                semaphores: { "db-*": 2 }
                tasks:
                  load: { run: "true", semaphores: [db-eu] }
                """, to: "static.yaml")
            let exported = try FlowrunBinary.run(["export", file, "--to", "argo"])
            #expect(exported.exitStatus == 0, "\(exported)")
            #expect(exported.stdout.contains("db-eu: \"2\""), "\(exported.stdout)")
            #expect(exported.stdout.contains("key: db-eu"), "\(exported.stdout)")
            #expect(!exported.stdout.contains("db-*"), "\(exported.stdout)")
        }
    }
}
