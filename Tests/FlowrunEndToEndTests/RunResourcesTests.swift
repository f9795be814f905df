import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// SPEC §13 with real processes: declared resources are admitted,
    /// enforced through cgroups (v1's memory and cpu controllers on this
    /// machine, as root), an out-of-memory death is named from the cgroup,
    /// and every task's use is measured and shown.
    @Suite struct RunResourcesTests {
        /// A python3 that allocates `mebibytes` MiB and touches every page (resident, not just reserved).
        static func allocate(_ mebibytes: Int) -> String {
            #"python3 -c "b = bytearray(\#(mebibytes) * 1048576); [b.__setitem__(i, 1) for i in range(0, len(b), 4096)]; print('allocated')""#
        }

        static func python3() throws {
            _ = try RunSandbox.tool("python3")
        }

        /// 300 MiB under `memory: 100M`: the kernel kills it for the limit,
        /// and the reason says so — read from the cgroup, not "exit 137".
        @Test func aTaskOverItsMemoryLimitEndsOutOfMemory() throws {
            try Self.python3()
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  big:
                    run: \(Self.allocate(300))
                    resources: {memory: 100M}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            #expect(!run.stderr.contains("not enforced"), "\(run)")
            let record = try sandbox.record()
            let finished = try #require(record.finished("big"))
            #expect(finished["status"] as? String == "failed")
            #expect(finished["reason"] as? String == "out of memory (limit 100 MiB)", "\(finished)")
            #expect(run.stdout.contains("out of memory (limit 100 MiB)"), "\(run.stdout)")
            #expect(!run.stdout.contains("killed by signal 9"), "\(run.stdout)")
        }

        /// `retry_resources: {memory: x2}`: 100 MiB, then 200 MiB, both too
        /// small for 300 MiB, then 400 MiB, which fits; each retry says the memory it gets.
        @Test func retryResourcesGrowsTheMemoryUntilItFits() throws {
            try Self.python3()
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  big:
                    run: \(Self.allocate(300))
                    resources: {memory: 100M}
                    retries: 5
                    retry_delay: 10ms
                    retry_resources: {memory: x2}
                """, timeout: .seconds(60))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let retries = record.events("task_retrying", task: "big")
            #expect(retries.map { $0["reason"] as? String } == ["out of memory (limit 100 MiB)", "out of memory (limit 200 MiB)"])
            #expect(retries.map { ($0["memory_bytes"] as? NSNumber)?.intValue } == [200 << 20, 400 << 20])
            #expect(record.finished("big")?["attempt"] as? Int == 3)
            #expect(run.stdout.contains("attempt 2 with 200 MiB memory"), "\(run.stdout)")
            #expect(run.stdout.contains("attempt 3 with 400 MiB memory"), "\(run.stdout)")
            // Each attempt's task_started says the memory it holds.
            let held = record.events("task_started", task: "big").map {
                (($0["limits"] as? [String: Any])?["resources"] as? [String: Any])?["memory_bytes"] as? Int
            }
            #expect(held == [100 << 20, 200 << 20, 400 << 20], "\(record.events("task_started", task: "big"))")
            // `memory_bytes`, `peak_memory_bytes` and `cpu_seconds` as docs/events-schema.json says.
            let problems = try RunEndToEndParallel.EventsSchemaTests.validate(try RunEndToEndParallel.EventsSchemaTests.eventsFile(in: sandbox))
            #expect(problems.isEmpty, "\(problems)")
        }

        /// A retry never grows past `capacity`: 100M × 4 is capped at 250M.
        @Test func retryResourcesStopsAtCapacity() throws {
            try Self.python3()
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                capacity: {memory: 250M}
                tasks:
                  big:
                    run: \(Self.allocate(300))
                    resources: {memory: 100M}
                    retries: 2
                    retry_delay: 10ms
                    retry_resources: {memory: x4}
                """, timeout: .seconds(60))
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.events("task_retrying", task: "big").map { ($0["memory_bytes"] as? NSNumber)?.intValue } == [250 << 20, 250 << 20])
            #expect(record.finished("big")?["reason"] as? String == "out of memory (limit 250 MiB)")
        }

        /// Four `cpus: 1` tasks on `capacity: {cpus: 2}`: each, once started,
        /// counts the tasks running (marker files), waits until a second one
        /// runs beside it and stays a moment. Three at once would show as a
        /// count of 3; one at a time would never see a second (it says `alone`).
        @Test func fourOneCPUTasksOnTwoCPUsNeverRunMoreThanTwoAtOnce() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("running"), withIntermediateDirectories: true)
            let task = #"""
                {run: 'touch "$SANDBOX/running/$FLOWRUN_TASK"; ls "$SANDBOX/running" | wc -l >> "$SANDBOX/counts"; i=0; while [ "$(ls "$SANDBOX/running" | wc -l)" -lt 2 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; [ $i -lt 400 ] || echo alone >> "$SANDBOX/counts"; sleep 0.3; ls "$SANDBOX/running" | wc -l >> "$SANDBOX/counts"; rm "$SANDBOX/running/$FLOWRUN_TASK"', resources: {cpus: 1}}
                """#
            let run = try sandbox.run("""
                capacity: {cpus: 2, memory: 1G}
                tasks:
                  a: \(task)
                  b: \(task)
                  c: \(task)
                  d: \(task)
                """, timeout: .seconds(90))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let counts = sandbox.lines("counts")
            #expect(!counts.contains("alone"), "a task never had a second beside it: \(counts)")
            let numbers = counts.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            #expect(numbers.count == 8, "\(counts)")
            #expect(numbers.max() == 2, "tasks running at once: \(counts)")
            // The live view says what the others wait for, and how much.
            #expect(run.stdout.contains("cpus: needs 1 CPU, 2 CPUs of 2 CPUs in use"), "\(run.stdout)")
        }

        /// Without `capacity`, the same four tasks start together: the
        /// counter above does see more than two when nothing holds them back.
        @Test func withoutResourcesTheCounterSeesAllFour() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("running"), withIntermediateDirectories: true)
            let task = #"""
                {run: 'touch "$SANDBOX/running/$FLOWRUN_TASK"; i=0; while [ "$(ls "$SANDBOX/running" | wc -l)" -lt 4 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; ls "$SANDBOX/running" | wc -l >> "$SANDBOX/counts"'}
                """#
            let run = try sandbox.run("tasks:\n  a: \(task)\n  b: \(task)\n  c: \(task)\n  d: \(task)\n", timeout: .seconds(90))
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("counts").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.max() == 4)
        }

        /// More than `capacity` could never start: refused at validation, at
        /// the `resources:` line, with the fix; `auto` is this machine's.
        @Test func aTaskDeclaringMoreThanCapacityIsRefusedAtValidation() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                capacity: {cpus: 2, memory: 1G}
                tasks:
                  fits: {run: "true", resources: {cpus: 2, memory: 1G}}
                  wide:
                    run: "true"
                    resources: {cpus: 3}
                  huge: {run: "true", resources: {memory: 1.5G}}
                  machine: {run: "true", resources: {memory: 64T}}
                """)
            let validate = try FlowrunBinary.run(["validate", workflow], in: sandbox.path)
            #expect(validate.exitStatus == 2, "\(validate)")
            #expect(validate.stderr.contains("workflow.yaml:6:5: error: task 'wide' declares 3 CPUs, more than capacity of 2 CPUs: it could never start; lower resources.cpus or raise capacity.cpus"), "\(validate.stderr)")
            #expect(validate.stderr.contains("workflow.yaml:7:23: error: task 'huge' declares 1.5 GiB of memory, more than capacity of 1 GiB"), "\(validate.stderr)")
            // 64 TiB is more than the explicit 1 GiB here; without capacity: more than this machine's.
            #expect(!validate.stderr.contains("'fits'"), "\(validate.stderr)")
            let auto = try sandbox.write(workflow: "tasks:\n  machine: {run: 'true', resources: {memory: 64T}}\n", to: "auto.yaml")
            let autoRun = try FlowrunBinary.run([auto, "--log-dir", sandbox.logDirectory], in: sandbox.path)
            #expect(autoRun.exitStatus == 2, "\(autoRun)")
            #expect(autoRun.stderr.contains("auto.yaml:2:26: error: task 'machine' declares 64 TiB of memory, more than this machine's capacity (capacity: auto)"), "\(autoRun.stderr)")
            #expect(runFolders(in: sandbox.logDirectory).isEmpty, "a refused workflow ran")
        }

        /// `--dry-run` (text and JSON) and `list` show what each task declares.
        @Test func dryRunAndListShowDeclaredResources() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                capacity: {cpus: 4, memory: 8G}
                tasks:
                  train: {run: "true", resources: {cpus: 2.5, memory: 6G}, retries: 1, retry_resources: {memory: x2}}
                  plain: {run: "true"}
                groups:
                  shards:
                    foreach: [a, b]
                    task: {run: "true", resources: {memory: 512M}}
                """)
            let text = try FlowrunBinary.run([workflow, "--dry-run"], in: sandbox.path)
            #expect(text.exitStatus == 0, "\(text)")
            #expect(text.stdout.contains("capacity 4 CPUs, 8 GiB memory: what declared resources are admitted against"), "\(text.stdout)")
            #expect(text.stdout.contains("resources: 2.5 CPUs, 6 GiB memory, retried out of memory with memory ×2"), "\(text.stdout)")
            #expect(text.stdout.contains("resources: 512 MiB memory"), "\(text.stdout)")
            let json = try FlowrunBinary.run([workflow, "--dry-run", "--output", "json"], in: sandbox.path)
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let steps = try #require(plan["steps"] as? [[String: Any]])
            let train = try #require(steps.first { $0["name"] as? String == "train" }?["resources"] as? [String: Any])
            #expect((train["cpus"] as? NSNumber)?.doubleValue == 2.5)
            #expect((train["memory_bytes"] as? NSNumber)?.intValue == 6 << 30)
            #expect((train["retry_memory_factor"] as? NSNumber)?.doubleValue == 2)
            #expect(steps.first { $0["name"] as? String == "plain" }?["resources"] == nil)
            let capacity = try #require((plan["workflow"] as? [String: Any])?["capacity"] as? [String: Any])
            #expect((capacity["memory_bytes"] as? NSNumber)?.intValue == 8 << 30)
            let list = try FlowrunBinary.run(["list", workflow], in: sandbox.path)
            #expect(list.stdout.split(separator: "\n").contains { $0.hasPrefix("train") && $0.hasSuffix("2.5 CPUs, 6 GiB memory") }, "\(list.stdout)")
        }

        /// Peak memory and CPU time for every task: a cgroup's peak for one
        /// with resources, `wait4`'s for one without; `show` lists both
        /// within 10 % of the 300 MiB each allocated.
        @Test func showListsPeakMemoryWithinTenPercentOfWhatTheTaskAllocated() throws {
            try Self.python3()
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  limited:
                    run: \(Self.allocate(300))
                    resources: {memory: 1G}
                  unlimited:
                    run: \(Self.allocate(300))
                    needs: limited
                """, timeout: .seconds(60))
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            for name in ["limited", "unlimited"] {
                let peak = try #require((record.task(name)?["peak_memory_bytes"] as? NSNumber)?.doubleValue, "no peak for \(name) in summary.json")
                #expect(abs(peak - 300 * 1_048_576) <= 0.1 * 300 * 1_048_576, "\(name): \(peak)")
                let cpu = try #require((record.finished(name)?["cpu_seconds"] as? NSNumber)?.doubleValue)
                #expect(cpu > 0)
            }
            let show = try FlowrunBinary.run(["show", "--log-dir", sandbox.logDirectory], in: sandbox.path)
            #expect(show.exitStatus == 0, "\(show)")
            for name in ["limited", "unlimited"] {
                let line = try #require(show.stdout.split(separator: "\n").first { $0.contains(" \(name) ") }, "\(show.stdout)")
                let shown = try #require(line.firstRange(of: "peak mem ").map { line[$0.upperBound...].prefix { $0 != " " } }, "\(line)")
                let mebibytes = try #require(Double(shown), "\(line)")
                #expect(abs(mebibytes - 300) <= 30, "\(line)")
                #expect(line.contains(" cpu "), "\(line)")
            }
            let json = try FlowrunBinary.run(["show", "--log-dir", sandbox.logDirectory, "--output", "json"], in: sandbox.path)
            let shown = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let limited = try #require((shown["tasks"] as? [[String: Any]])?.first { $0["name"] as? String == "limited" })
            #expect(limited["peak_memory_bytes"] is NSNumber && limited["cpu_seconds"] is NSNumber, "\(limited)")
        }

        /// The trace's args and the SVG timeline's tooltips carry what each attempt used.
        @Test func theTraceAndTheTimelineShowWhatEachTaskUsed() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("tasks:\n  work: {run: 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'}\n")
            #expect(run.exitStatus == 0, "\(run)")
            let show = try FlowrunBinary.run(
                ["show", "--log-dir", sandbox.logDirectory, "--trace", sandbox.file("trace.json"), "--timeline", sandbox.file("timeline.svg")], in: sandbox.path)
            #expect(show.exitStatus == 0, "\(show)")
            let trace = try #require(sandbox.read("trace.json"))
            #expect(trace.contains("\"peak_memory_bytes\":") && trace.contains("\"cpu_seconds\":"), "\(trace)")
            let svg = try #require(sandbox.read("timeline.svg"))
            #expect(svg.contains(" · cpu ") && svg.contains(" · peak mem "), "\(svg)")
        }

        /// As a user with no right to make cgroups (uid 65534), a run with
        /// resources says once, at the start, that they are admitted but not
        /// enforced and why — and still admits them.
        @Test func withoutCgroupRightsTheRunSaysResourcesAreNotEnforced() throws {
            try WorkflowLookupTrustTests.requireAnotherUser()
            let folder = try TemporaryDirectory(prefix: "flowrun-unprivileged")
            #expect(chmod(folder.path, 0o1777) == 0)
            try folder.write("tasks:\n  a: {run: 'echo ran', resources: {cpus: 1, memory: 64M}}\n  b: {run: 'true'}\n", to: "workflow.yaml")
            #expect(chmod(folder.path + "/workflow.yaml", 0o644) == 0)
            let outcome = try WorkflowLookupTrustTests.asOtherUser(
                [folder.path + "/workflow.yaml", "--log-dir", folder.path + "/record", "--output", "plain"], in: folder.path)
            #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
            let lines = outcome.stderr.split(separator: "\n").filter { $0.contains("resources are admitted but not enforced") }
            #expect(lines.count == 1, "\(outcome.stderr)")
            #expect(lines.first?.contains("cannot make a folder in") == true, "\(outcome.stderr)")
            // Without any resources, nothing is said.
            try folder.write("tasks:\n  b: {run: 'true'}\n", to: "plain.yaml")
            let plain = try WorkflowLookupTrustTests.asOtherUser([folder.path + "/plain.yaml", "--log-dir", folder.path + "/record"], in: folder.path)
            #expect(plain.status == 0 && !plain.stderr.contains("not enforced"), "\(plain)")
        }

        /// The cgroup v1 folders flowrun's own process would hold a run's: `flowrun-RUNID` under them.
        static func cgroupBases() throws -> [String] {
            let membership = try String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)
            var bases: [String] = []
            for line in membership.split(separator: "\n") {
                let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
                guard fields.count == 3 else { continue }
                let controllers = fields[1].split(separator: ",")
                let path = fields[2] == "/" ? "" : String(fields[2])
                if controllers.contains("memory") { bases.append("/sys/fs/cgroup/memory" + path) }
                if controllers.contains("cpu") { bases.append("/sys/fs/cgroup/cpu" + path) }
            }
            try #require(bases.count == 2 && bases.allSatisfy { FileManager.default.fileExists(atPath: $0) }, "cgroup v1 memory and cpu hierarchies not found: \(bases)")
            return bases
        }

        static let holdingTask = """
            tasks:
              holder:
                run: 'echo "$FLOWRUN_RUN_ID" > "$SANDBOX/run-id"; exec sleep 60'
                resources: {cpus: 0.5, memory: 64M}
            """

        /// The folders exist while the task runs (the task is in them) and are gone after the run.
        @Test func cgroupFoldersAreRemovedAfterTheRun() throws {
            let bases = try Self.cgroupBases()
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start(Self.holdingTask.replacingOccurrences(of: "exec sleep 60", with: "cat /proc/self/cgroup > \"$SANDBOX/cgroup\""))
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 0, "\(ended)")
            let runID = try #require(sandbox.read("run-id")?.trimmingCharacters(in: .whitespacesAndNewlines))
            let membership = sandbox.read("cgroup") ?? ""
            // The task ran in its attempt's folder in both hierarchies.
            #expect(membership.contains(":memory:") && membership.contains("/flowrun-\(runID)/"), "\(membership)")
            #expect(membership.split(separator: "\n").contains { $0.contains(":cpu") && $0.contains("/flowrun-\(runID)/") }, "\(membership)")
            for base in bases { #expect(!FileManager.default.fileExists(atPath: base + "/flowrun-" + runID), "\(base)/flowrun-\(runID) left behind") }
        }

        /// `kill -9` of the pid the shell knows (the engine cleans up), and of
        /// the engine (the supervisor does): the run's folders go either way.
        @Test(arguments: ["supervisor", "engine"])
        func cgroupFoldersAreRemovedAfterKillMinus9(_ victim: String) throws {
            let bases = try Self.cgroupBases()
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start(Self.holdingTask)
            #expect(sandbox.waitFor("run-id"), "the task never started")
            let runID = try #require(sandbox.read("run-id")?.trimmingCharacters(in: .whitespacesAndNewlines))
            for base in bases { #expect(FileManager.default.fileExists(atPath: base + "/flowrun-" + runID), "no \(base)/flowrun-\(runID) while the task runs") }
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            kill(victim == "supervisor" ? flowrun.pid : engine, SIGKILL)
            _ = flowrun.finish()
            #expect(poll(until: .seconds(20)) { bases.allSatisfy { !FileManager.default.fileExists(atPath: $0 + "/flowrun-" + runID) } },
                    "left behind: \(bases.map { $0 + "/flowrun-" + runID }.filter { FileManager.default.fileExists(atPath: $0) })")
        }
    }
}
