/// Every name a run can be asked to run (SPEC §10): tasks, groups and joins
/// of the main phase, and each member of a fan-out whose items are known
/// before the run, by the name it will run under (`shard[2]`, or its
/// rendered `name:`). A plain look-up: however a member's name is made (a
/// matrix's `test[os=linux,py=3.12]`), `MemberNaming` makes it and this
/// table finds it.
package struct TargetTable {
    package enum Target: Equatable {
        /// A task, group, join or fan-out template: its node in the main graph.
        case node(Int)
        /// One member of a fan-out: the fan-out's node, its group's node, the item's index.
        case member(fanOut: Int, group: Int, item: Int)
    }

    private var targets: [String: Target] = [:]
    /// Task, group, join and member names, for did-you-mean.
    package private(set) var names: [String] = []

    package init(_ workflow: Workflow, graph: DependencyGraph) {
        for (index, node) in graph.nodes.enumerated() where node.kind != .fanOut {
            targets[node.name] = .node(index)
            names.append(node.name)
        }
        for group in workflow.groups {
            guard let fanOut = group.fanOut, let fanOutNode = graph.indexByName[fanOut.template.name],
                  let groupNode = graph.indexByName[group.name],
                  let members = MemberNaming.staticNames(of: group, vars: workflow.vars) else { continue }
            for (item, member) in members.enumerated() {
                let target = Target.member(fanOut: fanOutNode, group: groupNode, item: item)
                // A declared name wins; `GROUP[INDEX]` also finds a member that has a `name:`.
                if targets[member] == nil {
                    targets[member] = target
                    names.append(member)
                }
                let indexName = "\(group.name)[\(item)]"
                if targets[indexName] == nil { targets[indexName] = target }
            }
        }
    }

    package func target(named name: String) -> Target? { targets[name] }
}
