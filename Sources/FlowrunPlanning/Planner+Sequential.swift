import FlowrunModel

/// `sequential: true` groups in the plan (SPEC §10).
extension Planner {
    /// Each planned member of a sequential group runs after the planned
    /// member written before it; the fan-out (members in item order) after
    /// the last static member. Members left out by targets leave no gap:
    /// order applies among those that run, and naming a later member does
    /// not run the earlier ones (docs/FORMAT.md "Sequential groups").
    static func chainSequentialMembers(_ steps: inout [PlanStep], workflow: Workflow) {
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
        }
    }
}
