import FlowrunModel

/// `sequential: true` groups in the plan (SPEC §10).
extension Planner {
    /// Each planned member of a sequential group runs after the planned
    /// member written before it; the fan-out (members in item order) after
    /// the last static member. Members left out by targets leave no gap:
    /// order applies among those that run, and naming a later member does
    /// not run the earlier ones (docs/FORMAT.md "Sequential groups").
    static func chainSequentialMembers(_ steps: inout [PlanStep], workflow: Workflow, graph: DependencyGraph) {
        guard workflow.groups.contains(where: \.sequential) else { return }
        let position = Dictionary(steps.indices.map { (steps[$0].name, $0) }, uniquingKeysWith: { first, _ in first })
        for group in workflow.groups where group.sequential {
            var previous: String?
            for member in group.members {
                guard let index = position[member.name] else { continue }
                steps[index].runsAfter = previous
                previous = member.name
            }
            if let template = group.fanOut?.template, let index = position[template.name] {
                steps[index].runsAfter = previous
                steps[index].sequential = true
            }
            if let index = position[group.name] { steps[index].sequential = true }
            // A member's own needs start when it is reached (SPEC §15).
            let sequence = group.members.map(\.name) + (group.fanOut.map { [$0.template.name] } ?? [])
            runInOrder(&steps, sequence: sequence, graph: graph, reason: "sequential group \(group.name)", inside: group.name)
        }
    }

    /// Stages again with each step after the one it runs after: the
    /// graph's stages know only `needs`, so `--dry-run` listed a member
    /// that waits for its predecessor as starting at once. Steps are then
    /// ordered by the new stages (then by position in the file), as before.
    static func restage(_ steps: inout [PlanStep], graph: DependencyGraph) {
        let position = Dictionary(steps.indices.map { (steps[$0].name, $0) }, uniquingKeysWith: { first, _ in first })
        var waitsFor = [[Int]](repeating: [], count: steps.count)
        var dependents = [[Int]](repeating: [], count: steps.count)
        for index in steps.indices {
            var needs = (graph.indexByName[steps[index].name].map { graph.dependencies[$0] } ?? []).compactMap { position[graph.nodes[$0].name] }
            if let previous = steps[index].runsAfter.flatMap({ position[$0] }) { needs.append(previous) }
            waitsFor[index] = needs
            for need in needs { dependents[need].append(index) }
        }
        var stage = [Int](repeating: 0, count: steps.count)
        var remaining = waitsFor.map(\.count)
        var ready = steps.indices.filter { remaining[$0] == 0 }
        var cursor = 0
        while cursor < ready.count {
            let node = ready[cursor]
            cursor += 1
            for dependent in dependents[node] {
                stage[dependent] = max(stage[dependent], stage[node] + 1)
                remaining[dependent] -= 1
                if remaining[dependent] == 0 { ready.append(dependent) }
            }
        }
        // Validation rejects a member that needs one written after it, so every step was reached.
        guard ready.count == steps.count else { return }
        for index in steps.indices { steps[index].stage = stage[index] }
        let keys = steps.indices.map { (stage: stage[$0], location: steps[$0].location) }
        let order = steps.indices.sorted { (keys[$0].stage, keys[$0].location) < (keys[$1].stage, keys[$1].location) }
        steps = order.map { steps[$0] }
    }
}
