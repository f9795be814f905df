/// Every name a run can be asked to run (SPEC §10): tasks, groups and joins
/// of the main phase, and each member of a fan-out whose items are known
/// before the run, by the name it will run under (`shard[2]`, or its
/// rendered `name:`). However a member's name is made (a matrix's
/// `test[os=linux,py=3.12]`), `MemberNaming` makes it and this table finds it.
///
/// Members are not listed: a name is matched against each fan-out when it is
/// looked up (`GROUP[INDEX]` is read back, a range's `name:` is solved for
/// its index), so naming one member of a 10,000,000-item range costs what
/// `--dry-run` does, not a table of 10,000,000 names.
package struct TargetTable {
    package enum Target: Equatable {
        /// A task, group, join or fan-out template: its node in the main graph.
        case node(Int)
        /// One member of a fan-out: the fan-out's node, its group's node, the item's index.
        case member(fanOut: Int, group: Int, item: Int)
    }

    /// A fan-out whose member names are known before the run.
    private struct StaticFanOut {
        var group: String
        var fanOutNode: Int
        var groupNode: Int
        var source: FanOutSource
        var template: Template?
        var axes: [String]?
        var count: Int
        /// Matrix combinations named `GROUP[INDEX]` (`MemberNaming.indexNamed`).
        var indexNamed: Set<Int> = []
    }

    private var nodes: [String: Int] = [:]
    private var nodeNames: [String] = []
    private var fanOuts: [StaticFanOut] = []
    private var vars: [Variable] = []

    package init(_ workflow: Workflow, graph: DependencyGraph) {
        for (index, node) in graph.nodes.enumerated() where node.kind != .fanOut {
            nodes[node.name] = index
            nodeNames.append(node.name)
        }
        vars = workflow.vars
        // An alias is one more name for its node; the checker made sure none clashes.
        for (name, aliases) in Self.aliases(of: workflow) {
            guard let index = graph.indexByName[name] else { continue }
            for alias in aliases where nodes[alias.value] == nil {
                nodes[alias.value] = index
                nodeNames.append(alias.value)
            }
        }
        for group in workflow.groups {
            guard let fanOut = group.fanOut, let count = fanOut.source.staticCount, let fanOutNode = graph.indexByName[fanOut.template.name],
                  let groupNode = graph.indexByName[group.name],
                  MemberNaming.namesAreStatic(template: fanOut.template.nameTemplate) else { continue }
            // A record's field that is itself a record has no name before the run: no member is a target then.
            if case .records(let items) = fanOut.source, let template = fanOut.template.nameTemplate,
               !items.indices.allSatisfy({ MemberNaming.name(group: group.name, item: items[$0], index: $0, template: template, fieldNames: true,
                                                              axes: fanOut.matrixAxes, vars: workflow.vars) != nil }) { continue }
            fanOuts.append(StaticFanOut(
                group: group.name, fanOutNode: fanOutNode, groupNode: groupNode, source: fanOut.source,
                template: fanOut.template.nameTemplate, axes: fanOut.matrixAxes, count: count,
                indexNamed: fanOut.template.nameTemplate == nil ? MemberNaming.indexNamed(fanOut.source, axes: fanOut.matrixAxes) : []))
        }
    }

    /// Each task's and group's aliases, by its name, in file order.
    package static func aliases(of workflow: Workflow) -> [(name: String, aliases: [Reference])] {
        var found: [(name: String, aliases: [Reference])] = []
        for task in workflow.tasks where !task.aliases.isEmpty { found.append((task.name, task.aliases)) }
        for group in workflow.groups {
            if !group.aliases.isEmpty { found.append((group.name, group.aliases)) }
            for member in group.members where !member.aliases.isEmpty { found.append((member.name, member.aliases)) }
        }
        return found
    }

    package func target(named name: String) -> Target? {
        if let node = nodes[name] { return .node(node) }
        // The first fan-out (in file order) with a member of that name, as when every name was listed in order.
        for fanOut in fanOuts {
            if let item = member(named: name, of: fanOut) {
                return .member(fanOut: fanOut.fanOutNode, group: fanOut.groupNode, item: item)
            }
        }
        return nil
    }

    /// Member `item` of fan-out node `fanOut` (a `.member` target): the
    /// name it runs under, whichever name found it (`test[0]` is
    /// `test[os=linux,py=3.11]`), and its item.
    package func member(_ item: Int, ofFanOut fanOut: Int) -> (name: String, item: FanOutItem)? {
        guard let found = fanOuts.first(where: { $0.fanOutNode == fanOut }) else { return nil }
        return MemberNaming.staticMember(item, group: found.group, source: found.source, template: found.template, axes: found.axes, vars: vars)
    }

    /// Task, group, join and member names, for did-you-mean: members of
    /// fan-outs up to `NumericBounds.namesCheckedAtLoad` items (a bigger
    /// one's names are not listed for a hint).
    package var names: [String] {
        var names = nodeNames
        for fanOut in fanOuts where fanOut.count <= NumericBounds.namesCheckedAtLoad {
            names += MemberNaming.staticNames(group: fanOut.group, source: fanOut.source, template: fanOut.template, axes: fanOut.axes, vars: vars) ?? []
        }
        return names
    }

    /// The item whose member is called `name`. A member's own name wins
    /// over a later member's `GROUP[INDEX]`; `GROUP[INDEX]` over a later
    /// member's own name (the order a listed table had).
    private func member(named name: String, of fanOut: StaticFanOut) -> Int? {
        let indexed = indexForm(name, group: fanOut.group).flatMap { $0 < fanOut.count ? $0 : nil }
        let named = firstMember(named: name, of: fanOut, before: indexed.map { $0 + 1 } ?? fanOut.count)
        return named ?? indexed
    }

    /// INDEX of `GROUP[INDEX]`, written as `String(index)` writes it.
    private func indexForm(_ name: String, group: String) -> Int? {
        guard name.hasPrefix(group + "["), name.hasSuffix("]") else { return nil }
        let digits = name.utf8.dropFirst(group.utf8.count + 1).dropLast()
        guard let index = Int(String(decoding: digits, as: UTF8.self)), index >= 0, String(index).utf8.count == digits.count else { return nil }
        return index
    }

    /// The first member below `limit` whose own name is `name`.
    private func firstMember(named name: String, of fanOut: StaticFanOut, before limit: Int) -> Int? {
        switch fanOut.source {
        case .range(let low, _):
            // Without `name:` every member is GROUP[INDEX]; with one, solved for the index.
            guard let template = fanOut.template else { return nil }
            return MemberNaming.rangeMember(named: name, template: template, low: low, count: min(limit, fanOut.count), vars: vars)
        case .list(let items):
            for index in items.indices.prefix(limit) {
                if MemberNaming.name(group: fanOut.group, item: .text(items[index]), index: index, template: fanOut.template, fieldNames: false, axes: nil, vars: vars) == name {
                    return index
                }
            }
            return nil
        case .records(let items):
            for index in items.indices.prefix(limit) {
                if MemberNaming.name(group: fanOut.group, item: items[index], index: index, template: fanOut.template, fieldNames: true, axes: fanOut.axes, vars: vars,
                                     indexNamed: fanOut.indexNamed.contains(index)) == name {
                    return index
                }
            }
            return nil
        case .expression:
            return nil
        }
    }
}
