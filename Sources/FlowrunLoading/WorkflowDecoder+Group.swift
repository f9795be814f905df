import FlowrunYAML
import FlowrunModel

extension WorkflowDecoder {
    static let groupKeys = ["concurrency", "timeout", "needs", "tasks", "foreach", "task", "description", "sequential", "matrix", "split", "when", "if", "aliases", "executor"]

    mutating func group(_ name: Located<String>, _ node: YAMLNode) -> GroupDefinition? {
        guard let fields = fields(of: node, what: "group '\(name.value)'", allowed: Self.groupKeys) else { return nil }
        var group = GroupDefinition(name: name.value, location: name.location)
        if let node = fields["concurrency"]?.value { group.concurrency = int(node, what: "concurrency", in: NumericBounds.slots) }
        if let node = fields["timeout"]?.value { group.timeout = positiveDuration(node, what: "timeout") }
        if let node = fields["needs"]?.value { group.needs = references(node, what: "needs") }
        if let node = fields["description"]?.value { group.description = string(node, what: "description") }
        if let node = fields["sequential"]?.value, let value = bool(node, what: "sequential") { group.sequential = value }
        if let node = fields["when"]?.value, let when = runCondition(node) { group.when = when }
        if let node = fields["if"]?.value { group.condition = condition(node) }
        if let node = fields["aliases"]?.value { group.aliases = aliases(node) }
        if let node = fields["executor"]?.value { group.executor = executor(node) }
        if let node = fields["tasks"]?.value {
            group.members = named(node, what: "the tasks of group '\(name.value)'").compactMap {
                task($0.key, $0.value, context: .groupMember)
            }
        }
        if let foreach = fields["foreach"], let matrix = fields["matrix"] {
            error("group '\(name.value)' has both foreach and matrix: a matrix is the list of items; keep one of them", at: matrix.key.mark > foreach.key.mark ? matrix.key : foreach.key)
        }
        let split = fields["split"].flatMap { fanOutSplit($0, foreach: fields["foreach"]) }
        switch (fields["foreach"] ?? fields["matrix"], fields["task"]) {
        case (let foreach?, let template?):
            let isMatrix = foreach.key.scalar?.text == "matrix"
            let expanded = isMatrix ? matrix(foreach.value) : nil
            let source = isMatrix ? expanded.map { .records($0.combinations) } : fanOutSource(foreach.value, split: split)
            let templateName = Located("\(name.value)[*]", at: location(template.key))
            if let source, let task = task(templateName, template.value, context: .fanOutTemplate) {
                group.fanOut = FanOut(source: source, template: task, location: location(foreach.key))
                if case .expression = source { group.fanOut?.split = split }
                group.fanOut?.matrixAxes = expanded?.axes
            }
        case (let foreach?, nil):
            let key = foreach.key.scalar?.text ?? "foreach"
            error("group '\(name.value)' has \(key) but no task: add 'task:' with the template each item runs", at: foreach.key)
        case (nil, let template?):
            error("group '\(name.value)' has a task template but no foreach: add 'foreach:' with the items, or list members under 'tasks:'", at: template.key)
        case (nil, nil):
            if fields["tasks"] == nil {
                error("group '\(name.value)' has no members: add 'tasks:' or 'foreach:' with 'task:'", at: name.location)
            }
        }
        inheritExecutor(&group)
        return group
    }

    /// A group's `executor:` becomes each member's that sets none; a member
    /// that cannot be a job (`http:`, `sleep:`) is refused at the group's key.
    private mutating func inheritExecutor(_ group: inout GroupDefinition) {
        guard let executor = group.executor else { return }
        for position in group.members.indices where group.members[position].executor == nil {
            group.members[position].executor = executor
            checkExecutor(of: group.members[position], what: "task '\(group.members[position].name)'", inheritedFrom: group.name)
        }
        if group.fanOut?.template.executor == nil, var template = group.fanOut?.template {
            template.executor = executor
            checkExecutor(of: template, what: "the fan-out task template", inheritedFrom: group.name)
            group.fanOut?.template = template
        }
    }

    private mutating func fanOutSource(_ node: YAMLNode, split: FanOutSplit?) -> FanOutSource? {
        switch node.content {
        case .sequence(let items):
            if let firstMapping = items.first(where: { $0.mapping != nil }) {
                var records: [FanOutItem] = []
                records.reserveCapacity(items.count)
                for item in items {
                    guard item.mapping != nil else {
                        error("foreach items must be all mappings or all strings and numbers: this \(item.kindDescription) sits among mappings (the first at \(firstMapping.mark.line):\(firstMapping.mark.column))", at: item)
                        continue
                    }
                    records.append(itemValue(item))
                }
                return .records(records)
            }
            var values: [String] = []
            for item in items {
                guard let scalar = item.scalar else {
                    error("foreach items must be strings, numbers or mappings, found \(item.kindDescription)", at: item)
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
                if let split { return .list(split.items(scalar.text)) }
                let words = FanOutSplit.whitespace.items(scalar.text)
                let hint = words.count > 1
                    ? "; to read it as the \(words.count) items \(words.prefix(3).joined(separator: ", "))\(words.count > 3 ? ", …" : "") add 'split: whitespace'"
                    : ""
                error("foreach takes a list, {range: [FIRST, LAST]} or a ${{ }} expression, found \(describe(node))\(hint)", at: node)
                return nil
            }
            return .expression(template(scalar.text, node: node))
        }
    }
}

extension WorkflowDecoder {
    /// `split: whitespace | lines | SEPARATOR`; only a string `foreach` has something to split.
    fileprivate mutating func fanOutSplit(_ pair: YAMLNode.Pair, foreach: YAMLNode.Pair?) -> FanOutSplit? {
        guard let text = string(pair.value, what: "split") else { return nil }
        guard let foreach else {
            error("split reads a foreach string as a list; this group has no foreach", at: pair.key)
            return nil
        }
        guard foreach.value.scalar != nil else {
            error("split reads a foreach string as a list, but this foreach is \(foreach.value.kindDescription) already", at: pair.key)
            return nil
        }
        switch text {
        case "whitespace": return .whitespace
        case "lines": return .lines
        case "":
            error("split needs a separator: whitespace, lines, or a string such as \",\"", at: pair.value)
            return nil
        default: return .separator(text)
        }
    }

    /// A YAML value as an item: scalars as their text (null as ''), mappings as records, sequences as lists.
    mutating func itemValue(_ node: YAMLNode) -> FanOutItem {
        switch node.content {
        case .scalar(let scalar):
            return .text(scalar.isNull ? "" : scalar.text)
        case .sequence(let items):
            return .list(items.map { itemValue($0) })
        case .mapping(let pairs):
            var fields: [FanOutField] = []
            fields.reserveCapacity(pairs.count)
            for pair in pairs {
                guard let key = pair.key.scalar?.text else {
                    error("keys of a foreach item must be plain strings, found \(pair.key.kindDescription)", at: pair.key)
                    continue
                }
                fields.append(FanOutField(key: key, value: itemValue(pair.value)))
            }
            return .record(fields)
        }
    }
}
