@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunEngine
import FlowrunTestSupport
import Testing

/// Random workflows (needs, `when`, weighted semaphores, a group with a
/// concurrency) run by the engine with fake attempts that end in a random
/// order with outcomes fixed per task: whenever the engine is at rest, what
/// runs fits every limit and something runs while anything waits; at the end
/// each task ran at most once and has the status SPEC §3 gives it.
@Suite struct RunEngineRandomScheduleTests {
    struct TaskSpec {
        var name: String
        var needs: [Int] = []
        var when = "success"
        var semaphores: [(index: Int, weight: Int)] = []
        var inGroup = false
        var fails = false
    }

    struct RandomWorkflow {
        var maxParallel: Int
        var capacities: [Int]
        var groupConcurrency: Int
        var tasks: [TaskSpec]

        init(seed: UInt64) {
            var random = SeededGenerator(seed: seed)
            func below(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
            maxParallel = 1 + below(4)
            capacities = (0..<(1 + below(3))).map { _ in 1 + below(3) }
            groupConcurrency = 1 + below(2)
            tasks = []
            let members = 2 + below(3)
            for member in 0..<members {
                var spec = TaskSpec(name: "m\(member)", inGroup: true, fails: below(5) == 0)
                if below(2) == 0 { let index = below(capacities.count); spec.semaphores = [(index, 1 + below(capacities[index]))] }
                tasks.append(spec)
            }
            for task in 0..<(4 + below(10)) {
                var spec = TaskSpec(name: "t\(task)", fails: below(4) == 0)
                let earlier = tasks.indices.filter { !tasks[$0].inGroup }
                if !earlier.isEmpty {
                    for _ in 0..<below(3) {
                        let need = earlier[below(earlier.count)]
                        if !spec.needs.contains(need) { spec.needs.append(need) }
                    }
                }
                spec.when = ["success", "success", "success", "failure", "always"][below(5)]
                for index in capacities.indices where below(3) == 0 {
                    spec.semaphores.append((index, 1 + below(capacities[index])))
                }
                tasks.append(spec)
            }
        }

        var yaml: String {
            func line(_ spec: TaskSpec) -> String {
                var fields = [#"run: "true""#]
                if !spec.needs.isEmpty { fields.append("needs: [" + spec.needs.map { tasks[$0].name }.joined(separator: ", ") + "]") }
                if spec.when != "success" { fields.append("when: \(spec.when)") }
                if !spec.semaphores.isEmpty {
                    fields.append("semaphores: {" + spec.semaphores.map { "s\($0.index): \($0.weight)" }.joined(separator: ", ") + "}")
                }
                return "\(spec.name): {" + fields.joined(separator: ", ") + "}"
            }
            var text = "name: random\nmax_parallel: \(maxParallel)\nsemaphores: {"
            text += capacities.indices.map { "s\($0): \(capacities[$0])" }.joined(separator: ", ") + "}\n"
            text += "groups:\n  g:\n    concurrency: \(groupConcurrency)\n    tasks:\n"
            for spec in tasks where spec.inGroup { text += "      " + line(spec) + "\n" }
            text += "tasks:\n"
            for spec in tasks where !spec.inGroup { text += "  " + line(spec) + "\n" }
            return text
        }

        /// Each task's final status under SPEC §3 (no task may fail and be allowed to).
        var expectedStatuses: [String: TaskStatus] {
            var status: [Int: TaskStatus] = [:]
            for index in tasks.indices {
                let spec = tasks[index]
                let needs = spec.needs.map { status[$0]! }
                let runs: Bool
                switch spec.when {
                case "failure": runs = needs.contains(.failed)
                case "always": runs = true
                default: runs = needs.allSatisfy { $0 == .succeeded }
                }
                status[index] = runs ? (spec.fails ? .failed : .succeeded) : .skipped
            }
            return Dictionary(uniqueKeysWithValues: status.map { (tasks[$0.key].name, $0.value) })
        }
    }

    @Test(arguments: 1...30)
    func randomWorkflowsRespectEveryLimitAndSettleAsSpecified(seed: UInt64) throws {
        let generated = RandomWorkflow(seed: seed)
        let specs = Dictionary(uniqueKeysWithValues: generated.tasks.map { ($0.name, $0) })
        let run = try EngineUnderTest(generated.yaml)
        var random = SeededGenerator(seed: seed &* 7919)
        run.start()
        try #require(run.log.waitFor(.runStarted), "seed \(seed): the run did not start")
        run.settle()
        var rounds = 0
        while true {
            let running = run.attempts.running
            var runSlots = 0, groupSlots = 0
            var semaphoreSlots = [Int](repeating: 0, count: generated.capacities.count)
            for name in running {
                let spec = try #require(specs[name])
                runSlots += 1
                if spec.inGroup { groupSlots += 1 }
                for use in spec.semaphores { semaphoreSlots[use.index] += use.weight }
            }
            #expect(runSlots <= generated.maxParallel, "seed \(seed): \(running.sorted()) over max_parallel \(generated.maxParallel)\n\(generated.yaml)")
            #expect(groupSlots <= generated.groupConcurrency, "seed \(seed): \(running.sorted()) over the group's concurrency\n\(generated.yaml)")
            for index in generated.capacities.indices {
                #expect(semaphoreSlots[index] <= generated.capacities[index], "seed \(seed): s\(index) over capacity\n\(generated.yaml)")
            }
            guard let next = running.sorted().randomElement(using: &random) else { break }
            run.attempts.end(next, specs[next]!.fails ? .failed : .succeeded)
            run.settle()
            rounds += 1
            try #require(rounds <= generated.tasks.count, "seed \(seed): more attempts than tasks")
        }
        // Nothing runs: the run must be over, not stuck with waiters (a deadlock).
        let expected = generated.expectedStatuses
        let code = run.exitCode()
        #expect(code == (expected.values.contains(.failed) ? 1 : 0), "seed \(seed)\n\(generated.yaml)")
        for (name, status) in expected {
            #expect(run.status(name) == status, "seed \(seed): \(name)\n\(generated.yaml)")
        }
        let starts = run.attempts.starts
        #expect(Set(starts).count == starts.count, "seed \(seed): a task started twice: \(starts)")
        #expect(Set(starts) == Set(expected.filter { $0.value != .skipped }.map { "\($0.key)#1" }), "seed \(seed)\n\(generated.yaml)")
    }
}
