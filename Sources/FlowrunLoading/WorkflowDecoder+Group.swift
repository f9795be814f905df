import FlowrunYAML
import FlowrunModel

extension WorkflowDecoder {
    static let groupKeys = ["concurrency", "timeout", "needs", "tasks", "foreach", "task", "description"]

    mutating func group(_ name: Located<String>, _ node: YAMLNode) -> GroupDefinition? {
        guard let fields = fields(of: node, what: "group '\(name.value)'", allowed: Self.groupKeys) else { return nil }
        var group = GroupDefinition(name: name.value, location: name.location)
        if let node = fields["concurrency"]?.value { group.concurrency = int(node, what: "concurrency", in: NumericBounds.slots) }
        if let node = fields["timeout"]?.value { group.timeout = positiveDuration(node, what: "timeout") }
        if let node = fields["needs"]?.value { group.needs = references(node, what: "needs") }
        if let node = fields["description"]?.value { group.description = string(node, what: "description") }
        if let node = fields["tasks"]?.value {
            group.members = named(node, what: "the tasks of group '\(name.value)'").compactMap {
                task($0.key, $0.value, context: .groupMember)
            }
        }
        switch (fields["foreach"], fields["task"]) {
        case (let foreach?, let template?):
            let source = fanOutSource(foreach.value)
            let templateName = Located("\(name.value)[*]", at: location(template.key))
            if let source, let task = task(templateName, template.value, context: .fanOutTemplate) {
                group.fanOut = FanOut(source: source, template: task, location: location(foreach.key))
            }
        case (let foreach?, nil):
            error("group '\(name.value)' has foreach but no task: add 'task:' with the template each item runs", at: foreach.key)
        case (nil, let template?):
            error("group '\(name.value)' has a task template but no foreach: add 'foreach:' with the items, or list members under 'tasks:'", at: template.key)
        case (nil, nil):
            if fields["tasks"] == nil {
                error("group '\(name.value)' has no members: add 'tasks:' or 'foreach:' with 'task:'", at: name.location)
            }
        }
        return group
    }

    private mutating func fanOutSource(_ node: YAMLNode) -> FanOutSource? {
        switch node.content {
        case .sequence(let items):
            var values: [String] = []
            for item in items {
                guard let scalar = item.scalar else {
                    error("foreach items must be strings or numbers, found \(item.kindDescription)", at: item)
                    continue
                }
                values.append(scalar.text)
            }
            return .list(values)
        case .mapping(let pairs):
            guard pairs.count == 1, pairs[0].key.scalar?.text == "range", let bounds = pairs[0].value.sequence, bounds.count == 2 else {
                let key = pairs.first?.key.scalar?.text ?? ""
                error("foreach takes a list, {range: [FIRST, LAST]} or a ${{ }} expression\(Suggestion.hint(for: key, in: ["range"]))", at: pairs.first?.key ?? node)
                return nil
            }
            guard let low = int(bounds[0], what: "the start of the range", in: NumericBounds.rangeEnd),
                  let high = int(bounds[1], what: "the end of the range", in: NumericBounds.rangeEnd) else { return nil }
            guard high >= low else {
                error("the range [\(low), \(high)] ends before it starts", at: pairs[0].value)
                return nil
            }
            let span = high.subtractingReportingOverflow(low)
            guard !span.overflow, span.partialValue < NumericBounds.rangeItems else {
                error("the range [\(low), \(high)] has more than \(NumericBounds.rangeItems.grouped) items", at: pairs[0].value)
                return nil
            }
            return .range(low, high)
        case .scalar(let scalar):
            guard scalar.text.contains("${{") else {
                error("foreach takes a list, {range: [FIRST, LAST]} or a ${{ }} expression, found \(describe(node))", at: node)
                return nil
            }
            return .expression(template(scalar.text, node: node))
        }
    }
}
