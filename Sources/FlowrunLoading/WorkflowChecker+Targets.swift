import FlowrunModel

/// `default:` and `sequential: true` (SPEC §10).
extension WorkflowChecker {
    mutating func checkTargets(graph: DependencyGraph, reachability: DependencyGraph.Reachability) {
        checkAliases()
        checkDefault(graph: graph)
        checkSequentialGroups(graph: graph, reachability: reachability)
    }

    /// An alias names one thing: not a task, group, join or finally task,
    /// and not another alias (SPEC §15).
    private mutating func checkAliases() {
        var given: [String: (owner: String, location: SourceLocation)] = [:]
        for (owner, aliases) in TargetTable.aliases(of: workflow) {
            for alias in aliases {
                if let other = declared[alias.value] {
                    diagnostics.append(.error(
                        "alias '\(alias.value)' of '\(owner)' is already the name of the \(other.kind) at \(other.location.line):\(other.location.column); pick another alias",
                        at: alias.location))
                } else if let first = given[alias.value] {
                    let whose = first.owner == owner ? "'\(owner)' already has it" : "it is already an alias of '\(first.owner)'"
                    diagnostics.append(.error(
                        "alias '\(alias.value)' of '\(owner)' names two things: \(whose) at \(first.location.line):\(first.location.column)",
                        at: alias.location))
                } else {
                    given[alias.value] = (owner, alias.location)
                }
            }
        }
    }

    /// Each name in `default:` is something a run can run by name.
    private mutating func checkDefault(graph: DependencyGraph) {
        if workflow.defaultTargets.isEmpty, let task = workflow.tasks.first(where: { $0.name == "default" }) {
            // go-task's and just's convention; here a bare run runs everything.
            diagnostics.append(.warning(
                "a task named 'default' is not what a bare run runs (it runs everything); add 'default: [default]' at the top to make it so",
                at: task.location))
        }
        guard !workflow.defaultTargets.isEmpty else { return }
        let table = TargetTable(workflow, graph: graph)
        let finallyNames = Set(workflow.finally.map(\.name))
        var seen = Set<String>()
        for target in workflow.defaultTargets {
            if finallyNames.contains(target.value) {
                diagnostics.append(.error("'\(target.value)' is a finally task, which runs after every run anyway; default names tasks, groups, joins or fan-out members", at: target.location))
            } else if table.target(named: target.value) == nil {
                diagnostics.append(.error(
                    "unknown name '\(target.value)' in default: no task, group, join or fan-out member has it\(Suggestion.hint(for: target.value, in: table.names))",
                    at: target.location))
            } else if !seen.insert(target.value).inserted {
                diagnostics.append(.error("'\(target.value)' is listed twice in default", at: target.location))
            }
        }
    }

    /// A member of a sequential group that needs a member written after it
    /// would wait forever: each waits for the other.
    private mutating func checkSequentialGroups(graph: DependencyGraph, reachability: DependencyGraph.Reachability) {
        for group in workflow.groups where group.sequential {
            var order = group.members.compactMap { member in graph.indexByName[member.name].map { (member, $0) } }
            if let template = group.fanOut?.template, let index = graph.indexByName[template.name] { order.append((template, index)) }
            // Pairs grow with the square of the members; past this many, direct needs only.
            let transitive = order.count <= 200
            for (position, (member, index)) in order.enumerated() {
                let later = order[(position + 1)...]
                for need in member.needs {
                    guard let target = later.first(where: { $0.0.name == need.value }) else { continue }
                    diagnostics.append(.error(
                        "'\(member.name)' needs '\(target.0.name)', which runs after it in sequential group '\(group.name)'; put '\(target.0.name)' first or drop the need",
                        at: need.location))
                }
                guard transitive else { continue }
                for (other, otherIndex) in later where !member.needs.contains(where: { $0.value == other.name })
                    && reachability.reaches(from: index, to: otherIndex) {
                    diagnostics.append(.error(
                        "'\(member.name)' waits for '\(other.name)' through its needs, but '\(other.name)' runs after it in sequential group '\(group.name)'",
                        at: member.location))
                }
            }
        }
    }
}
