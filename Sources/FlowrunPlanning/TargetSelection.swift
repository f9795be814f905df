package import FlowrunModel
import FlowrunValues

/// What a run runs (SPEC §10): the targets named on the command line (or
/// with `--only`, the same thing), else the file's `default:`, else
/// everything — each target with whatever it needs, transitively, and
/// nothing else.
///
/// A fan-out member named alone runs inside its group, which then runs that
/// member only (and its group's needs); a static member named alone runs
/// outside its group (docs/FORMAT.md "Targets").
package struct TargetSelection {
    /// The targets, as named; empty when everything runs.
    package var targets: [String]
    /// Whether `targets` came from the file's `default:`.
    package var isDefault = false
    /// The targets named on the command line, as the nodes that settle
    /// them (a fan-out member's group), in the order given: they run one
    /// after another (`Planner.runInOrder`). Empty for the file's `default:`.
    package var orderedTargets: [String] = []
    /// The main-graph nodes that run; nil: all of them.
    package var nodes: Set<Int>?
    /// By fan-out template name (`G[*]`): the items that run when only some
    /// members were named; absent: every item.
    package var fanOutItems: [String: [Int]] = [:]
    /// The nodes the targets name themselves (a member: its fan-out's), not what they need.
    package var namedNodes: Set<Int> = []

    package init(_ named: [String], usingDefault: Bool, workflow: Workflow, graph: DependencyGraph) throws(PlanningError) {
        targets = named
        if named.isEmpty, usingDefault, !workflow.defaultTargets.isEmpty {
            targets = workflow.defaultTargets.map(\.value)
            isDefault = true
        }
        guard !targets.isEmpty else { return }
        let table = TargetTable(workflow, graph: graph)
        var traversed = Set<Int>()
        var queue: [Int] = []
        var members: [Int: (group: Int, items: Set<Int>)] = [:]
        for name in targets {
            switch table.target(named: name) {
            case .node(let index)?:
                queue.append(index)
                namedNodes.insert(index)
                if !isDefault { orderedTargets.append(graph.nodes[index].name) }
            case .member(let fanOut, let group, let item)?:
                members[fanOut, default: (group, [])].items.insert(item)
                namedNodes.insert(fanOut)
                if !isDefault { orderedTargets.append(graph.nodes[group].name) }
                // The fan-out's own needs and its group's.
                queue.append(contentsOf: graph.dependencies[fanOut])
            case nil where workflow.finally.contains { $0.name == name }:
                // Not a target: finally tasks run at the end of every run, whichever targets it has.
                throw PlanningError(message: "'\(TerminalText.escaped(name))' is a finally task, which runs after every run anyway, whatever its targets; name the tasks, groups, joins or fan-out members to run (all of them: no target)")
            case nil:
                // As typed: a line break in it must not start a line of the message.
                throw PlanningError(message: "no task, group, join or fan-out member is named '\(TerminalText.escaped(name))'\(TargetSuggestion.hint(for: name, in: table.names))")
            }
        }
        while let next = queue.popLast() {
            guard traversed.insert(next).inserted else { continue }
            queue.append(contentsOf: graph.dependencies[next])
        }
        var selected = traversed
        for (fanOut, chosen) in members where !traversed.contains(chosen.group) {
            // The whole group runs anyway when something else selected it.
            selected.insert(chosen.group)
            selected.insert(fanOut)
            fanOutItems[graph.nodes[fanOut].name] = chosen.items.sorted()
        }
        nodes = selected
    }
}
