/// Every name a run can be asked to run (SPEC §10): tasks, groups and joins
/// of the main phase, and each member of a fan-out whose items are known
/// before the run, by the name it will run under (`shard[2]`, or its
/// rendered `name:`). A plain look-up: however a member's name is made (a
/// matrix's `test[os=linux,py=3.12]`), `StaticMemberNames` makes it and
/// this table finds it.
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
                  let members = StaticMemberNames.names(of: group, vars: workflow.vars, isTaken: { graph.indexByName[$0] != nil }) else { continue }
            for (item, member) in members.enumerated() {
                let target = Target.member(fanOut: fanOutNode, group: groupNode, item: item)
                // A declared name wins; `GROUP[INDEX]` also finds a member that has a `name:`.
                if targets[member.name] == nil {
                    targets[member.name] = target
                    names.append(member.name)
                }
                if targets[member.indexName] == nil { targets[member.indexName] = target }
            }
        }
    }

    package func target(named name: String) -> Target? { targets[name] }
}

/// The names the members of a fan-out with static items (`foreach: [..]`,
/// `{range: ..}`) will run under, as the engine names them: `GROUP[INDEX]`,
/// or the template's `name:` rendered when it reads only `item`, `index`,
/// `vars` and literals; a repeated name gets `~2`, `~3` (docs/FORMAT.md
/// "Member names"). Nil for items known only at run time.
package enum StaticMemberNames {
    package struct Member: Equatable {
        package var name: String
        /// `GROUP[INDEX]`, which finds the member whatever its name.
        package var indexName: String
    }

    /// `isTaken`: whether a task, group or join already has the name.
    package static func names(of group: GroupDefinition, vars: [Variable], isTaken: (String) -> Bool) -> [Member]? {
        guard let fanOut = group.fanOut else { return nil }
        let items: [String]
        switch fanOut.source {
        case .list(let list): items = list
        case .range(let low, let high): items = (low...high).map(String.init)
        case .expression: return nil
        }
        let values = Dictionary(vars.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
        // As the engine's `MemberNames`: the first free `~N` after a taken name.
        var used = Set<String>()
        var nextSuffix: [String: Int] = [:]
        func taken(_ name: String) -> Bool { used.contains(name) || isTaken(name) }
        return items.enumerated().map { index, item in
            let indexName = "\(group.name)[\(index)]"
            var name = fanOut.template.nameTemplate.flatMap { render($0, item: item, index: index, vars: values) } ?? indexName
            if name.isEmpty { name = indexName }
            if taken(name) {
                var suffix = nextSuffix[name] ?? 2
                while taken("\(name)~\(suffix)") { suffix += 1 }
                nextSuffix[name] = suffix + 1
                name = "\(name)~\(suffix)"
            }
            used.insert(name)
            return Member(name: name, indexName: indexName)
        }
    }

    /// The name, or nil when it reads a value only the run knows.
    private static func render(_ template: Template, item: String, index: Int, vars: [String: String]) -> String? {
        var text = ""
        for segment in template.segments {
            switch segment {
            case .text(let literal): text += literal
            case .expression(.operand(let operand), _):
                switch operand.path {
                case .item: text += item
                case .index: text += String(index)
                case .variable(let name): text += vars[name] ?? ""
                default: return nil
                }
            case .expression(.string(let literal), _): text += literal
            case .expression: return nil
            }
        }
        return text
    }
}
