import FlowrunYAML
import FlowrunModel

extension WorkflowDecoder {
    static let joinKeys = ["wait", "need", "timeout", "on_timeout", "report", "description"]

    mutating func join(_ name: Located<String>, _ node: YAMLNode) -> JoinDefinition? {
        guard let fields = fields(of: node, what: "join '\(name.value)'", allowed: Self.joinKeys) else { return nil }
        var need = Located(JoinQuorum.all, at: name.location)
        if let node = fields["need"]?.value, let quorum = quorum(node) { need = Located(quorum, at: location(node)) }
        var join = JoinDefinition(name: name.value, location: name.location, need: need)
        if let node = fields["wait"]?.value {
            join.wait = references(node, what: "wait")
            if join.wait.isEmpty { error("join '\(name.value)' waits for nothing: list tasks, groups or joins", at: node) }
        } else {
            error("join '\(name.value)' needs a 'wait' list of tasks, groups or joins", at: name.location)
        }
        if let node = fields["timeout"]?.value { join.timeout = positiveDuration(node, what: "timeout") }
        if let node = fields["on_timeout"]?.value, let text = string(node, what: "on_timeout") {
            if let policy = TimeoutPolicy(rawValue: text) {
                join.onTimeout = policy
            } else {
                error("on_timeout must be continue or fail, found '\(text)'\(Suggestion.hint(for: text, in: TimeoutPolicy.allCases.map(\.rawValue)))", at: node)
            }
        }
        if let node = fields["report"]?.value { join.report = reportItems(node) }
        if let node = fields["description"]?.value { join.description = string(node, what: "description") }
        return join
    }

    private mutating func quorum(_ node: YAMLNode) -> JoinQuorum? {
        if let scalar = node.scalar, scalar.style == .plain {
            if scalar.text == "all" { return .all }
            if scalar.text == "any" { return .any }
        }
        if node.scalar?.int != nil {
            return int(node, what: "need", in: NumericBounds.slots).map(JoinQuorum.count)
        }
        error("need must be all, any or a number of members, found \(describe(node))", at: node)
        return nil
    }

    /// `report: [member.stdout, member.outputs.key]` — the member part is
    /// matched against `wait` later, so names with dots work.
    private mutating func reportItems(_ node: YAMLNode) -> [ReportItem] {
        references(node, what: "report").compactMap { reference in
            guard let dot = reference.value.firstIndex(of: ".") else {
                error("report entries look like MEMBER.stdout or MEMBER.outputs.KEY, found '\(reference.value)'", at: reference.location)
                return nil
            }
            return ReportItem(
                member: String(reference.value[..<dot]), field: String(reference.value[reference.value.index(after: dot)...]),
                location: reference.location)
        }
    }
}
