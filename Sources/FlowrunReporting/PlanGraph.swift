import FlowrunValues
package import FlowrunPlanning

/// `flowrun graph FILE --format dot|mermaid`: the plan as a picture. Groups
/// are clusters, a fan-out is one node with its member count (or `*`), joins
/// are diamonds with their `need` and deadline, semaphores are noted on the
/// tasks that take them, and `finally` is a cluster of its own.
package enum PlanGraph {
    package enum Format: String, Sendable, CaseIterable {
        case dot, mermaid
    }

    package static func render(_ plan: Plan, as format: Format) -> String {
        switch format {
        case .dot: return dot(plan)
        case .mermaid: return mermaid(plan)
        }
    }

    /// One line per fact about a step, shared by both formats.
    static func label(_ step: PlanStep) -> [String] {
        var lines = [step.name]
        switch step.kind {
        case .task, .fanOut:
            if step.kind == .fanOut { lines[0] += " × " + (step.fanOutCount.map(String.init) ?? "*") }
            if let task = step.task {
                switch task.action {
                case .run: break
                case .sleep(let duration): lines.append("sleep " + duration.text)
                case .http(let request): lines.append(request.method + " " + URLRedaction.redact(request.url.source))
                }
                if task.when != .success { lines.append("when " + task.when.rawValue) }
                if task.condition != nil { lines.append("if …") }
                if let timeout = step.timers.timeout { lines.append("timeout " + timeout.text) }
                if task.retries > 0 { lines.append("retries \(task.retries)") }
            }
            for semaphore in step.limits?.semaphores ?? [] { lines.append("⚑ \(semaphore.name) \(semaphore.weight)/\(semaphore.capacity)") }
        case .group:
            lines[0] = "group " + step.name
            var facts: [String] = []
            if let concurrency = step.concurrency { facts.append("\(concurrency) at once") }
            if let timeout = step.timers.timeout { facts.append("deadline " + timeout.text) }
            if !facts.isEmpty { lines.append(facts.joined(separator: " · ")) }
        case .join:
            if let join = step.join {
                lines.append("need \(join.need.value) of \(step.members.count)")
                if let timeout = join.timeout?.value { lines.append("deadline \(timeout.text), then \(join.onTimeout.rawValue)") }
            }
        }
        return lines
    }

    // MARK: - DOT

    private static func dot(_ plan: Plan) -> String {
        var out = ["digraph \(dotQuoted(plan.workflow.name)) {"]
        out.append("  rankdir=LR; compound=true; fontname=\"Helvetica\";")
        out.append("  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];")
        out.append("  edge [color=\"#555555\"];")
        let groups = plan.steps.filter { $0.kind == .group }
        let grouped = Set(plan.steps.compactMap(\.group))
        for step in plan.steps where step.group == nil && step.kind != .group {
            out.append("  " + dotNode(step))
        }
        for group in groups {
            out.append("  subgraph \(dotQuoted("cluster_" + group.name)) {")
            out.append("    label=\(dotQuoted(label(group).joined(separator: "\n"))); style=\"rounded,dashed\"; color=\"#3b6ea5\";")
            // The group's own node: what needs the group waits for it.
            out.append("    \(dotQuoted(group.name)) [shape=folder, label=\(dotQuoted("all of " + group.name)), color=\"#3b6ea5\"];")
            for member in plan.steps where member.group == group.name {
                out.append("    " + dotNode(member))
            }
            out.append("  }")
        }
        if !plan.finallySteps.isEmpty {
            out.append("  subgraph \"cluster_finally\" {")
            out.append("    label=\"finally\"; style=dashed; color=\"#999999\";")
            for step in plan.finallySteps { out.append("    " + dotNode(step)) }
            out.append("  }")
        }
        for step in plan.steps + plan.finallySteps {
            for need in edgesInto(step, grouped: grouped) {
                out.append("  \(dotQuoted(need.from)) -> \(dotQuoted(step.name))" + (need.style.map { " [style=\($0)]" } ?? "") + ";")
            }
        }
        out.append("}")
        return out.joined(separator: "\n") + "\n"
    }

    private static func dotNode(_ step: PlanStep) -> String {
        let text = dotQuoted(label(step).joined(separator: "\n"))
        switch step.kind {
        case .join: return "\(dotQuoted(step.name)) [shape=diamond, style=solid, label=\(text)];"
        case .fanOut: return "\(dotQuoted(step.name)) [shape=box3d, style=solid, label=\(text)];"
        default: return "\(dotQuoted(step.name)) [label=\(text)];"
        }
    }

    /// Edges into a step: its needs, and for a group its members (dashed).
    private static func edgesInto(_ step: PlanStep, grouped: Set<String>) -> [(from: String, style: String?)] {
        switch step.kind {
        case .group:
            return step.members.map { ($0, "dashed") }
        case .join:
            return step.members.map { ($0, nil) }
        case .task, .fanOut:
            // A member's group needs are drawn once, into the group's members.
            return step.needs.map { ($0, nil) }
        }
    }

    private static func dotQuoted(_ text: String) -> String {
        "\"" + shown(text).replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"").replacingAll("\n", with: "\\n") + "\""
    }

    /// Control characters a name holds (a workflow's `name:` may hold an
    /// ESC) shown escaped, line by line: the graph goes to a terminal as
    /// often as to `dot`. The label's own line breaks stay.
    private static func shown(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { TerminalText.escaped(String($0)) }.joined(separator: "\n")
    }

    // MARK: - Mermaid

    private static func mermaid(_ plan: Plan) -> String {
        var ids: [String: String] = [:]
        func id(_ name: String) -> String {
            if let known = ids[name] { return known }
            let made = "n\(ids.count)"
            ids[name] = made
            return made
        }
        func node(_ step: PlanStep) -> String {
            let text = mermaidQuoted(label(step).joined(separator: "<br/>"))
            switch step.kind {
            case .join: return "\(id(step.name)){\(text)}"
            case .fanOut: return "\(id(step.name))[[\(text)]]"
            case .group: return "\(id(step.name))[/\(mermaidQuoted("all of " + step.name))/]"
            case .task: return "\(id(step.name))(\(text))"
            }
        }
        var out = ["flowchart LR"]
        for step in plan.steps where step.group == nil && step.kind != .group {
            out.append("  " + node(step))
        }
        for group in plan.steps where group.kind == .group {
            out.append("  subgraph \(id("cluster " + group.name))[\(mermaidQuoted(label(group).joined(separator: " · ")))]")
            out.append("    " + node(group))
            for member in plan.steps where member.group == group.name { out.append("    " + node(member)) }
            out.append("  end")
        }
        if !plan.finallySteps.isEmpty {
            out.append("  subgraph \(id("cluster finally"))[\"finally\"]")
            for step in plan.finallySteps { out.append("    " + node(step)) }
            out.append("  end")
        }
        let grouped = Set(plan.steps.compactMap(\.group))
        for step in plan.steps + plan.finallySteps {
            for edge in edgesInto(step, grouped: grouped) where ids[edge.from] != nil {
                out.append("  \(id(edge.from)) \(edge.style == nil ? "-->" : "-.->") \(id(step.name))")
            }
        }
        return out.joined(separator: "\n") + "\n"
    }

    private static func mermaidQuoted(_ text: String) -> String {
        "\"" + shown(text).replacingAll("\"", with: "#quot;") + "\""
    }
}
