/// Assembles nodes from events: anchors, aliases within a budget, merge keys,
/// duplicate keys, and the nesting-depth cap.
struct YAMLTreeBuilder {
    /// An open collection; a mapping's children alternate key, value.
    private struct Frame {
        var isMapping: Bool
        var children: [YAMLNode] = []
        var anchor: String?
        var tag: String?
        var mark: Mark
        /// `nodeCount` when the collection opened, to size its anchor.
        var firstNode: Int
    }

    /// An anchored node and how many nodes it stands for once expanded.
    private struct Anchored {
        var node: YAMLNode
        var size: Int
    }

    private let limits: YAMLLimits
    private var stack: [Frame] = []
    private var anchors: [String: Anchored] = [:]
    /// Anchors of collections still open: an alias to one would be recursive
    /// (`&a [*a]`), which a tree cannot hold. Counts, as an open anchor may be
    /// redefined inside itself.
    private var openAnchors: [String: Int] = [:]
    private var root: YAMLNode?
    private var inDocument = false
    private var documentMark = Mark.start
    /// Nodes made so far, aliases counted by their expanded size.
    private var nodeCount = 0
    private var expandedByAliases = 0
    private(set) var problems: [YAMLProblem] = []

    init(limits: YAMLLimits) {
        self.limits = limits
    }

    var hasOpenDocument: Bool { inDocument }

    /// Feeds one event; returns a document when one is complete.
    mutating func consume(_ event: YAMLEvent) throws(YAMLProblem) -> YAMLNode? {
        switch event {
        case .streamStart, .streamEnd:
            return nil
        case .documentStart(let mark):
            inDocument = true
            documentMark = mark
            anchors = [:]
            openAnchors = [:]
            root = nil
            return nil
        case .documentEnd:
            inDocument = false
            defer { root = nil }
            // libyaml gives an empty document an empty scalar; this is a fallback.
            return root ?? YAMLNode(.scalar(YAMLScalar("")), at: documentMark)
        case .alias(let name, let mark):
            if openAnchors[name, default: 0] > 0 {
                throw YAMLProblem("alias '*\(name)' refers to '&\(name)', a collection that contains it; recursive structures are not supported", at: mark)
            }
            guard let anchored = anchors[name] else {
                throw YAMLProblem("unknown alias '*\(name)' (no anchor '&\(name)' before it)", at: mark)
            }
            expandedByAliases += anchored.size
            guard expandedByAliases <= limits.aliasExpansionBudget else {
                throw YAMLProblem(
                    "aliases expand to more than \(limits.aliasExpansionBudget) nodes; refusing to expand further (an alias bomb?)",
                    at: mark)
            }
            nodeCount += anchored.size
            var node = anchored.node
            node.mark = mark
            attach(node)
        case .scalar(let scalar, let anchor, let tag, let mark):
            nodeCount += 1
            let node = YAMLNode(.scalar(scalar), at: mark, tag: tag)
            if let anchor { anchors[anchor] = Anchored(node: node, size: 1) }
            attach(node)
        case .sequenceStart(let anchor, let tag, let mark):
            try push(Frame(isMapping: false, anchor: anchor, tag: tag, mark: mark, firstNode: nodeCount))
        case .mappingStart(let anchor, let tag, let mark):
            try push(Frame(isMapping: true, anchor: anchor, tag: tag, mark: mark, firstNode: nodeCount))
        case .sequenceEnd, .mappingEnd:
            guard let frame = stack.popLast() else { return nil }
            if let anchor = frame.anchor { openAnchors[anchor, default: 1] -= 1 }
            let content: YAMLNode.Content
            if frame.isMapping {
                // libyaml always pairs keys with values; an odd child would be dropped, not read past.
                let entries = frame.children
                let pairs = stride(from: 0, to: entries.count - 1, by: 2).map {
                    YAMLNode.Pair(key: entries[$0], value: entries[$0 + 1])
                }
                content = .mapping(resolveMerges(pairs))
            } else {
                content = .sequence(frame.children)
            }
            nodeCount += 1
            let node = YAMLNode(content, at: frame.mark, tag: frame.tag)
            if let anchor = frame.anchor { anchors[anchor] = Anchored(node: node, size: nodeCount - frame.firstNode) }
            attach(node)
        }
        return nil
    }

    private mutating func push(_ frame: Frame) throws(YAMLProblem) {
        guard stack.count < limits.maxDepth else {
            throw YAMLProblem("nesting is deeper than \(limits.maxDepth) levels", at: frame.mark)
        }
        stack.append(frame)
        if let anchor = frame.anchor { openAnchors[anchor, default: 0] += 1 }
    }

    private mutating func attach(_ node: YAMLNode) {
        if stack.isEmpty {
            root = node
        } else {
            stack[stack.count - 1].children.append(node)
        }
    }

    /// Applies merge keys (`<<: *base` or `<<: [*a, *b]`): explicit keys win,
    /// then earlier merged maps win over later ones. Reports duplicate
    /// explicit keys, naming both places.
    private mutating func resolveMerges(_ pairs: [YAMLNode.Pair]) -> [YAMLNode.Pair] {
        var explicit: [String: Mark] = [:]
        var hasMerge = false
        for pair in pairs {
            if Self.isMergeKey(pair.key) { hasMerge = true; continue }
            guard let key = pair.key.scalar?.text else { continue }
            if let first = explicit[key] {
                problems.append(YAMLProblem("duplicate key '\(key)' (first defined at \(first))", at: pair.key.mark))
            } else {
                explicit[key] = pair.key.mark
            }
        }
        guard hasMerge else { return pairs }

        var seen = Set(explicit.keys)
        var result: [YAMLNode.Pair] = []
        for pair in pairs {
            guard Self.isMergeKey(pair.key) else {
                result.append(pair)
                continue
            }
            let sources: [YAMLNode]
            switch pair.value.content {
            case .mapping:
                sources = [pair.value]
            case .sequence(let items):
                if let item = items.first(where: { $0.mapping == nil }) {
                    problems.append(YAMLProblem("a merge key '<<' takes a mapping or a list of mappings, found \(item.kindDescription) in the list", at: item.mark))
                    continue
                }
                sources = items
            case .scalar:
                problems.append(YAMLProblem("a merge key '<<' takes a mapping or a list of mappings, found \(pair.value.kindDescription)", at: pair.value.mark))
                continue
            }
            for source in sources {
                for merged in source.mapping ?? [] {
                    guard let key = merged.key.scalar?.text else { result.append(merged); continue }
                    if seen.insert(key).inserted { result.append(merged) }
                }
            }
        }
        return result
    }

    private static func isMergeKey(_ node: YAMLNode) -> Bool {
        guard let scalar = node.scalar else { return false }
        if node.tag == "tag:yaml.org,2002:merge" { return true }
        return scalar.style == .plain && scalar.text == "<<" && node.tag == nil
    }
}
