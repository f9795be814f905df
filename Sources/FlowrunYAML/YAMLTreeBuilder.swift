/// Assembles nodes from events: anchors, aliases within a budget, merge keys,
/// duplicate keys, and the nesting-depth cap.
struct YAMLTreeBuilder {
    /// An open collection.
    private struct Frame {
        var isMapping: Bool
        var items: [YAMLNode] = []
        var pairs: [YAMLNode.Pair] = []
        /// A mapping's key still waiting for its value.
        var pendingKey: YAMLNode?
        var anchor: String?
        var tag: String?
        var mark: Mark
        /// `nodeCount` when the collection opened, to size its anchor.
        var firstNode: Int

        mutating func append(_ node: YAMLNode) {
            if !isMapping {
                items.append(node)
            } else if let key = pendingKey {
                pairs.append(YAMLNode.Pair(key: key, value: node))
                pendingKey = nil
            } else {
                pendingKey = node
            }
        }
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
            // libyaml always gives a key its value; a dangling key would be dropped.
            let content: YAMLNode.Content = frame.isMapping ? .mapping(resolveMerges(frame.pairs)) : .sequence(frame.items)
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
            stack[stack.count - 1].append(node)
        }
    }

    /// Applies merge keys (`<<: *base` or `<<: [*a, *b]`): explicit keys win,
    /// then earlier merged maps win over later ones. Reports duplicate
    /// explicit keys, naming both places. Keys compare by their text, so
    /// `a` and `'a'` are the same key.
    private mutating func resolveMerges(_ pairs: [YAMLNode.Pair]) -> [YAMLNode.Pair] {
        guard reportDuplicateKeys(in: pairs) else { return pairs }

        var seen = Set(pairs.lazy.filter { !Self.isMergeKey($0.key) }.compactMap { $0.key.scalar?.text })
        var result: [YAMLNode.Pair] = []
        result.reserveCapacity(pairs.count)
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

    /// Reports each explicit key seen before in the mapping; returns whether
    /// the mapping has a merge key. Most mappings are small, and a linear
    /// scan beats hashing there.
    private mutating func reportDuplicateKeys(in pairs: [YAMLNode.Pair]) -> Bool {
        var hasMerge = false
        var firstMarks: [String: Mark] = pairs.count > 16 ? Dictionary(minimumCapacity: pairs.count) : [:]
        for index in pairs.indices {
            let key = pairs[index].key
            if Self.isMergeKey(key) { hasMerge = true; continue }
            guard let text = key.scalar?.text else { continue }
            let first: Mark?
            if pairs.count > 16 {
                // One hash per key; a duplicate (rare) puts the first mark back.
                first = firstMarks.updateValue(key.mark, forKey: text)
                if let first { firstMarks[text] = first }
            } else {
                first = pairs[..<index].first { $0.key.scalar?.text == text && !Self.isMergeKey($0.key) }?.key.mark
            }
            if let first {
                problems.append(YAMLProblem("duplicate key '\(text)' (first defined at \(first))", at: key.mark))
            }
        }
        return hasMerge
    }

    private static func isMergeKey(_ node: YAMLNode) -> Bool {
        guard let scalar = node.scalar else { return false }
        if node.tag == "tag:yaml.org,2002:merge" { return true }
        return scalar.style == .plain && scalar.text == "<<" && node.tag == nil
    }
}
