import FlowrunModel

/// Order among things that would otherwise start together (SPEC §15):
/// command-line targets one after another, and what a `sequential` member
/// needs only when that member is reached — as `task`, `just` and `make`
/// without `-j` run them, and as go-task's `task:` call runs its deps.
extension Planner {
    /// `sequence[k]` with what it needs that nothing before it in `sequence`
    /// needs: those steps start once `sequence[k - 1]` has settled, and are
    /// skipped when it did not succeed. Done by `runsAfter` on the first
    /// steps of each new part (a group stands for its members: they wait for
    /// it to start), so the engine needs no new kind of edge.
    static func runInOrder(
        _ steps: inout [PlanStep], sequence: [String], graph: DependencyGraph, reason: String, inside: String? = nil
    ) {
        let position = Dictionary(steps.indices.map { (steps[$0].name, $0) }, uniquingKeysWith: { first, _ in first })
        // What a step waits for: its needs, the step it runs after, and the
        // group that must start first (not `inside`: the group being chained).
        func waitsFor(_ name: String) -> [String] {
            guard let node = graph.indexByName[name] else { return [] }
            var result = graph.dependencies[node].map { graph.nodes[$0].name }
            if let index = position[name], let after = steps[index].runsAfter { result.append(after) }
            if let group = graph.nodes[node].group, group != inside, position[group] != nil { result.append(group) }
            return result.filter { position[$0] != nil }
        }
        var earlier = Set<String>()
        var previous: String?
        for target in sequence where position[target] != nil {
            var part = Set<String>()
            var queue = [target]
            while let next = queue.popLast() {
                guard !earlier.contains(next), part.insert(next).inserted else { continue }
                queue.append(contentsOf: waitsFor(next))
            }
            if let previous {
                // The first steps of the new part; a group's own members do not hold it back.
                for name in part where !waitsFor(name).contains(where: { part.contains($0) && graph.indexByName[$0].map { graph.nodes[$0].group } != name }) {
                    let index = position[name]!
                    // A step that already runs after another keeps it (a sequential member).
                    guard steps[index].runsAfter == nil, steps[index].kind == .task || steps[index].kind == .group else { continue }
                    steps[index].runsAfter = previous
                    steps[index].runsAfterReason = reason
                }
            }
            earlier.formUnion(part)
            previous = target
        }
    }
}
