import Foundation
import Testing

extension RunEndToEndParallel {
    /// What `--dry-run --output json` prints is what the run applies (issue
    /// 21, item 1): for every recipe in `workflows/` and for generated
    /// workflows, each `task_started` event's deadline, group deadline and
    /// slots equal its plan step's (a fan-out member: its fan-out step's), and
    /// `run_started`'s deadline equals the plan's. The engine reads these from
    /// the plan; were it to work them out again, this is where they would drift.
    @Suite struct PlanEqualsRunTests {
        /// Groups with concurrency, weighted semaphores (one named by a
        /// static member and a fan-out), group and run deadlines, `finally`
        /// with and without a timeout, a fan-out with no limit of its own.
        static let limitsWorkflow = """
            name: plan-equals-run-limits
            timeout: 90s
            max_parallel: 3
            semaphores: {db: 2, net: 5}
            groups:
              pool:
                concurrency: 2
                timeout: 45s
                tasks:
                  heavy: {run: "true", semaphores: {db: 2, net: 3}, timeout: 7s}
                  light: {run: "true", semaphores: [net]}
              fan:
                concurrency: 1
                timeout: 30s
                foreach: [x, y, z]
                task: {run: "echo ${{ item }}", semaphores: {net: 2}, timeout: 1500ms}
              open:
                foreach: {range: [1, 2]}
                task: {name: "open-${{ item }}", run: "true"}
            tasks:
              solo: {run: "true", semaphores: [db], needs: pool}
              plain: {run: "true"}
            finally:
              bare: {run: "true"}
              timed: {run: "true", timeout: 12s}
            """

        /// http tasks: without a timeout (the 5-minute whole-request limit),
        /// with one, retried (every attempt carries the same), and in `finally`.
        /// Port 9 on loopback refuses the connection: each attempt ends at once.
        static let httpWorkflow = """
            name: plan-equals-run-http
            tasks:
              ping: {http: {url: "http://127.0.0.1:9/"}, continue_on_error: true, retries: 1, retry_delay: 10ms}
              timed-ping: {http: {url: "http://127.0.0.1:9/"}, timeout: 3s, continue_on_error: true}
            finally:
              goodbye: {http: {url: "http://127.0.0.1:9/"}, continue_on_error: true}
              goodbye-timed: {http: {url: "http://127.0.0.1:9/"}, timeout: 4s, continue_on_error: true}
            """

        /// No deadline anywhere, `max_parallel` from the command line.
        static let overrideWorkflow = """
            name: plan-equals-run-override
            max_parallel: 7
            semaphores: {one: 1}
            tasks:
              a: {run: "true"}
              b: {run: "true", semaphores: [one]}
            groups:
              g:
                foreach: [p, q]
                task: {run: "true", semaphores: [one]}
            """

        @Test(arguments: WorkflowsTests.files)
        func everyRecipeRunsItsPlan(_ file: String) throws {
            let sandbox = try RunSandbox()
            let checked = try Self.check(file, [], in: sandbox, timeout: .seconds(90))
            #expect(checked > 0, "no task_started event was checked for \(file)")
        }

        @Test(arguments: [
            ("limits", limitsWorkflow, [String]()),
            ("http", httpWorkflow, []),
            ("override", overrideWorkflow, ["--max-parallel", "2"]),
            // A member selected without its group: no group runs, the plan shows neither its deadline nor its slot.
            ("only-member", limitsWorkflow, ["--only", "heavy"]),
        ])
        func generatedWorkflowsRunTheirPlan(_ name: String, _ text: String, _ extra: [String]) throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: text)
            let plan = try Self.plan(of: file, extra)
            let checked = try Self.check(file, extra, in: sandbox, timeout: .seconds(60))
            // Every task step of the plan started at least once (none passes unseen).
            let record = try sandbox.record()
            let started = Set(record.names("task_started"))
            let summaryGroups = Dictionary(record.tasks.compactMap { task in
                (task["name"] as? String).map { ($0, task["group"] as? String) }
            }, uniquingKeysWith: { first, _ in first })
            for step in plan.taskSteps {
                if step.kind == "fan-out" {
                    #expect(started.contains { summaryGroups[$0] == step.group }, "\(name): no member of \(step.group ?? "?") started")
                } else {
                    #expect(started.contains(step.name), "\(name): \(step.name) never started")
                }
            }
            #expect(checked >= plan.taskSteps.count, "\(name): \(checked) events checked")
        }

        /// The generated workflows' deadlines and limits are what their text
        /// says (the comparison above would pass were plan and run wrong alike).
        @Test func thePlanOfTheGeneratedWorkflowsIsWhatTheirTextSays() throws {
            let sandbox = try RunSandbox()
            let limits = try Self.plan(of: try sandbox.write(workflow: Self.limitsWorkflow, to: "limits.yaml"), [])
            #expect(limits.runTimeout == 90)
            let heavy = try #require(limits.step("heavy"))
            #expect(heavy.applied == Applied(
                timeout: 7, groupTimeout: 45,
                limits: Limits(run: 3, group: .init(name: "pool", concurrency: 2), semaphores: [
                    .init(name: "db", weight: 2, capacity: 2), .init(name: "net", weight: 3, capacity: 5),
                ])))
            #expect(limits.step("bare")?.applied.timeout == 300, "finally's own budget")
            #expect(limits.step("timed")?.applied.timeout == 12)
            #expect(limits.step("plain")?.applied == Applied(timeout: nil, groupTimeout: nil, limits: Limits(run: 3, group: nil, semaphores: [])))
            let http = try Self.plan(of: try sandbox.write(workflow: Self.httpWorkflow, to: "http.yaml"), [])
            #expect(http.runTimeout == nil)
            #expect(http.step("ping")?.applied.timeout == 300, "http's whole-request limit")
            #expect(http.step("timed-ping")?.applied.timeout == 3)
            #expect(http.step("goodbye")?.applied.timeout == 300)
            #expect(http.step("goodbye-timed")?.applied.timeout == 4)
            let override = try Self.plan(of: try sandbox.write(workflow: Self.overrideWorkflow, to: "override.yaml"), ["--max-parallel", "2"])
            #expect(override.step("a")?.applied.limits?.run == 2)
        }

        // MARK: - Comparing

        struct Limits: Equatable, CustomStringConvertible {
            struct Group: Equatable { var name: String, concurrency: Int }
            struct Semaphore: Equatable {
                var name: String, weight: Int, capacity: Int
                /// A name the plan computes per member (SPEC §15): the pools it said the members take, if it could tell.
                var computedPools: [String]? = nil
                var isComputed = false

                /// A computed name equals the pool a member took when the plan named that pool (or could not tell).
                static func == (a: Semaphore, b: Semaphore) -> Bool {
                    guard a.weight == b.weight, a.capacity == b.capacity else { return false }
                    if a.isComputed != b.isComputed {
                        let (planned, taken) = a.isComputed ? (a, b) : (b, a)
                        return planned.computedPools.map { $0.contains(taken.name) } ?? true
                    }
                    return a.name == b.name
                }
            }
            var run: Int
            var group: Group?
            /// Sorted by name: the plan lists them as the task does, the event by declaration.
            var semaphores: [Semaphore]

            init(run: Int, group: Group?, semaphores: [Semaphore]) {
                self.run = run
                self.group = group
                self.semaphores = semaphores.sorted { $0.name < $1.name }
            }

            /// The plan's `limits` or the event's (absent keys: none).
            init?(_ json: Any?) {
                guard let object = json as? [String: Any], let run = object["run"] as? Int else { return nil }
                let group = (object["group"] as? [String: Any]).flatMap { group in
                    (group["name"] as? String).flatMap { name in (group["concurrency"] as? Int).map { Group(name: name, concurrency: $0) } }
                }
                let semaphores = (object["semaphores"] as? [[String: Any]] ?? []).compactMap { use -> Semaphore? in
                    guard let name = use["name"] as? String, let weight = use["weight"] as? Int, let capacity = use["capacity"] as? Int else { return nil }
                    return Semaphore(name: name, weight: weight, capacity: capacity, computedPools: use["pools"] as? [String], isComputed: use["computed"] as? Bool ?? false)
                }
                self.init(run: run, group: group, semaphores: semaphores)
            }

            var description: String {
                "run \(run)" + (group.map { ", group \($0.name) \($0.concurrency)" } ?? "")
                    + semaphores.map { ", \($0.name) \($0.weight)/\($0.capacity)" }.joined()
            }
        }

        /// The deadlines (seconds) and slots of one task.
        struct Applied: Equatable, CustomStringConvertible {
            var timeout: Double?
            var groupTimeout: Double?
            var limits: Limits?

            init(timeout: Double?, groupTimeout: Double?, limits: Limits?) {
                self.timeout = timeout
                self.groupTimeout = groupTimeout
                self.limits = limits
            }

            init(_ object: [String: Any]) {
                // To the millisecond: events round there, the plan does not.
                func milliseconds(_ value: Any?) -> Double? { (value as? Double).map { ($0 * 1000).rounded() / 1000 } }
                self.init(timeout: milliseconds(object["timeout_seconds"]), groupTimeout: milliseconds(object["group_timeout_seconds"]),
                          limits: Limits(object["limits"]))
            }

            var description: String {
                "timeout \(timeout.map { "\($0)" } ?? "none"), group timeout \(groupTimeout.map { "\($0)" } ?? "none"), "
                    + (limits?.description ?? "no limits")
            }
        }

        struct PlannedStep {
            var name: String, kind: String, group: String?
            var applied: Applied
        }

        struct PlanFacts {
            var runTimeout: Double?
            /// Tasks and fan-outs, main phase and `finally`.
            var taskSteps: [PlannedStep]

            func step(_ name: String) -> PlannedStep? { taskSteps.first { $0.name == name && $0.kind == "task" } }
        }

        static func plan(of file: String, _ extra: [String]) throws -> PlanFacts {
            let run = try FlowrunBinary.run([file, "--dry-run", "--output", "json"] + extra)
            run.expectNoCrash()
            try #require(run.exitStatus == 0, "\(run)")
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
            let workflow = try #require(plan["workflow"] as? [String: Any])
            let steps = (plan["steps"] as? [[String: Any]] ?? []) + (plan["finally"] as? [[String: Any]] ?? [])
            let taskSteps = steps.compactMap { step -> PlannedStep? in
                guard let kind = step["kind"] as? String, kind == "task" || kind == "fan-out", let name = step["name"] as? String else { return nil }
                return PlannedStep(name: name, kind: kind, group: step["group"] as? String, applied: Applied(step))
            }
            return PlanFacts(runTimeout: workflow["timeout_seconds"] as? Double, taskSteps: taskSteps)
        }

        /// Plans and runs `file`; checks every `task_started` against its
        /// step and `run_started` against the plan. Returns how many
        /// `task_started` events it checked.
        static func check(_ file: String, _ extra: [String], in sandbox: RunSandbox, timeout: Duration) throws -> Int {
            let plan = try plan(of: file, extra)
            let run = try FlowrunBinary.run(
                sandbox.arguments(file, extra, output: "json"), in: sandbox.path, environment: sandbox.environment, timeout: timeout)
            run.expectNoCrash()
            #expect(!run.timedOut, "\(run)")
            let record = try sandbox.record()

            let runStarted = try #require(record.events("run_started").first, "no run_started\n\(run)")
            #expect(runStarted["timeout_seconds"] as? Double == plan.runTimeout, "\(file): the run's deadline")

            let ownStep = Dictionary(plan.taskSteps.filter { $0.kind == "task" }.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            let fanOutStepOfGroup = Dictionary(plan.taskSteps.filter { $0.kind == "fan-out" }.compactMap { step in step.group.map { ($0, step) } },
                                               uniquingKeysWith: { first, _ in first })
            var checked = 0
            for event in record.events("task_started") {
                let name = try #require(event["task"] as? String)
                // A static task is its own step; a fan-out member's group (from summary.json) names its fan-out step.
                let step = ownStep[name] ?? (record.task(name)?["group"] as? String).flatMap { fanOutStepOfGroup[$0] }
                let planned = try #require(step, "\(file): task_started of \(name), which no plan step accounts for")
                let applied = Applied(event)
                #expect(applied == planned.applied, "\(file): \(name) ran with \(applied), the plan (\(planned.name)) says \(planned.applied)")
                checked += 1
            }
            return checked
        }
    }
}
