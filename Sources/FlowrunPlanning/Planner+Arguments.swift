import FlowrunModel
import FlowrunValues

/// `${{ args }}` (SPEC §15): the words after `--` on the command line, each
/// one single-quoted shell word, and `${{ args[N] }}` one of them as a
/// value, for the tasks the command line names (a
/// named group's members, a named fan-out member's template); every other
/// task reads nothing. Filled in while planning, so `--dry-run` shows the
/// words, and a task's identity (resume, `sources:`) changes with them.
extension Planner {
    static func fillArguments(_ workflow: inout Workflow, arguments: [String]?, selection: TargetSelection, graph: DependencyGraph) throws(PlanningError) {
        let words = arguments ?? []
        if !words.isEmpty, selection.targets.isEmpty {
            throw PlanningError(message: "the words after -- are for the target named before them: name it (flowrun FILE TARGET -- WORDS…)")
        }
        var receivers = Set<String>()
        for index in selection.namedNodes {
            let node = graph.nodes[index]
            switch node.kind {
            case .task, .fanOut:
                receivers.insert(node.name)
            case .group:
                guard let group = workflow.groups.first(where: { $0.name == node.name }) else { continue }
                receivers.formUnion(group.members.map(\.name))
                if let fanOut = group.fanOut { receivers.insert(fanOut.template.name) }
            case .join:
                continue
            }
        }
        let filled = words.map(TemplateRenderer.shellWord).joined(separator: " ")
        var read = false
        func fill(_ task: inout TaskDefinition) {
            fillWords(&task)
            fillWhole(&task)
        }
        /// `args[N]`: one value, word N or '' past the last (as `"$N"` in sh), wherever it is read.
        /// Other tasks read '' (the engine's value for it): only the named ones are rewritten.
        func fillWords(_ task: inout TaskDefinition) {
            guard receivers.contains(task.name), task.readsArgumentWord else { return }
            read = true
            task = task.replacingOperands { operand in
                guard case .argument(let number) = operand.path else { return nil }
                return .string(number < words.count ? words[number] : "")
            }
        }
        func fillWhole(_ task: inout TaskDefinition) {
            // Most scripts have no `${{ }}` at all: a byte scan before any segment is made.
            guard case .run(var script) = task.action, script.source.utf8.contains(UInt8(ascii: "$")),
                  script.segments.contains(where: Template.isWholeArguments) else { return }
            let receives = receivers.contains(task.name)
            read = read || receives
            let segments = script.segments.map { segment -> Template.Segment in
                Template.isWholeArguments(segment) ? .text(receives ? filled : "") : segment
            }
            // The source follows: the plan shows, and the identity hashes, the words this run passes.
            script.source = segments.map { segment -> String in
                switch segment {
                case .text(let text): return text
                case .expression(let expression, _): return "${{ \(expression) }}"
                }
            }.joined()
            script.segments = segments
            task.action = .run(script)
        }
        for index in workflow.tasks.indices { fill(&workflow.tasks[index]) }
        for group in workflow.groups.indices {
            for member in workflow.groups[group].members.indices { fill(&workflow.groups[group].members[member]) }
            if workflow.groups[group].fanOut != nil { fill(&workflow.groups[group].fanOut!.template) }
        }
        for index in workflow.finally.indices { fill(&workflow.finally[index]) }
        if !words.isEmpty, !read {
            let named = selection.targets.map { "'\($0)'" }.joined(separator: ", ")
            throw PlanningError(message: "the words after -- are passed as ${{ args }}, which no task of \(named) reads: write ${{ args }} in its run: (or ${{ args[0] }} for one word), or drop the words")
        }
    }
}

extension TaskDefinition {
    /// Whether any template or the `if:` reads `args[N]` (a byte scan first: most read none).
    var readsArgumentWord: Bool {
        let sources = templates + sources + generates
        guard sources.contains(where: { $0.source.utf8.contains(UInt8(ascii: "[")) }) || condition != nil else { return false }
        let operands = sources.flatMap(\.operands) + (condition?.value.operands ?? [])
        return operands.contains { if case .argument = $0.path { true } else { false } }
    }
}
