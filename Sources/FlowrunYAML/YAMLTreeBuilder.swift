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
        /// The deepest collection nesting among the children so far.
        var childNesting = 0

        mutating func append(_ node: YAMLNode, nesting: Int) {
            childNesting = max(childNesting, nesting)
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

    /// An anchored node, how many nodes it stands for once expanded, and how
    /// many collections deep it nests (0 for a scalar).
    private struct Anchored {
        var node: YAMLNode
        var size: Int
        var nesting: Int
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
    private var problems: [YAMLProblem] = []
    /// Where the first problem past `limits.maxProblems` was found.
    private var firstUnreported: Mark?

    init(limits: YAMLLimits) {
        self.limits = limits
    }

    var hasOpenDocument: Bool { inDocument }

    /// The problems found in well-formed text, sorted by position; past
    /// `limits.maxProblems`, one last problem says the rest were left out.
    var sortedProblems: [YAMLProblem] {
        var sorted = problems.sorted { $0.mark < $1.mark }
        if let firstUnreported {
            sorted.append(YAMLProblem("more than \(limits.maxProblems) problems; the rest are not reported", at: firstUnreported))
        }
        return sorted
    }

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
            try attachAlias(name, at: mark)
        case .scalar(let scalar, let anchor, let tag, let mark):
            nodeCount += 1
            let node = YAMLNode(.scalar(scalar), at: mark, tag: tag)
            if let anchor { anchors[anchor] = Anchored(node: node, size: 1, nesting: 0) }
            attach(node, nesting: 0)
        case .sequenceStart(let anchor, let tag, let mark):
            try push(Frame(isMapping: false, anchor: anchor, tag: tag, mark: mark, firstNode: nodeCount))
        case .mappingStart(let anchor, let tag, let mark):
            try push(Frame(isMapping: true, anchor: anchor, tag: tag, mark: mark, firstNode: nodeCount))
        case .sequenceEnd, .mappingEnd:
            guard let frame = stack.popLast() else { return nil }
            if let anchor = frame.anchor { openAnchors[anchor, default: 1] -= 1 }
            // libyaml always gives a key its value; a dangling key would be dropped.
            let content: YAMLNode.Content = frame.isMapping ? .mapping(Self.fitted(resolveMerges(frame.pairs))) : .sequence(Self.fitted(frame.items))
            nodeCount += 1
            let node = YAMLNode(content, at: frame.mark, tag: frame.tag)
            let nesting = frame.childNesting + 1
            if let anchor = frame.anchor {
                anchors[anchor] = Anchored(node: node, size: nodeCount - frame.firstNode, nesting: nesting)
            }
            attach(node, nesting: nesting)
        }
        return nil
    }

    /// A large collection's array without the room doubling left in it: a
    /// 20,000-entry `tasks:` kept room for 32,768 pairs (1.3 MB unused)
    /// while the whole document was decoded.
    private static func fitted<Element>(_ array: [Element]) -> [Element] {
        guard array.count >= 1024, array.capacity > array.count + array.count / 4 else { return array }
        return array.withUnsafeBufferPointer { Array($0) }
    }

    /// Copies an anchored node in place of its alias, refusing recursion,
    /// expansion past the budget, and nesting past the depth cap (a chain of
    /// aliases to deep anchors would otherwise build a tree thousands of
    /// levels deep, too deep for recursive consumers).
    private mutating func attachAlias(_ name: String, at mark: Mark) throws(YAMLProblem) {
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
        guard stack.count + anchored.nesting <= limits.maxDepth else {
            throw YAMLProblem("alias '*\(name)' would nest deeper than \(limits.maxDepth) levels", at: mark)
        }
        nodeCount += anchored.size
        var node = anchored.node
        node.mark = mark
        attach(node, nesting: anchored.nesting)
    }

    private mutating func push(_ frame: Frame) throws(YAMLProblem) {
        guard stack.count < limits.maxDepth else {
            throw YAMLProblem("nesting is deeper than \(limits.maxDepth) levels", at: frame.mark)
        }
        stack.append(frame)
        if let anchor = frame.anchor { openAnchors[anchor, default: 0] += 1 }
    }

    private mutating func attach(_ node: YAMLNode, nesting: Int) {
        if stack.isEmpty {
            root = node
        } else {
            stack[stack.count - 1].append(node, nesting: nesting)
        }
    }

    /// Records a problem unless `limits.maxProblems` are already recorded,
    /// so a file of a million duplicate keys costs no more than one of a hundred.
    private mutating func report(_ message: @autoclosure () -> String, at mark: Mark) {
        if problems.count < limits.maxProblems {
            problems.append(YAMLProblem(message(), at: mark))
        } else if firstUnreported == nil {
            firstUnreported = mark
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
                    report("a merge key '<<' takes a mapping or a list of mappings, found \(item.kindDescription) in the list", at: item.mark)
                    continue
                }
                sources = items
            case .scalar:
                report("a merge key '<<' takes a mapping or a list of mappings, found \(pair.value.kindDescription)", at: pair.value.mark)
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
        let hashes = pairs.count > 16
        var hasMerge = false
        var firstMarks: [String: Mark] = hashes ? Dictionary(minimumCapacity: pairs.count) : [:]
        for index in pairs.indices {
            let key = pairs[index].key
            if Self.isMergeKey(key) { hasMerge = true; continue }
            guard let text = key.scalar?.text else { continue }
            let first: Mark?
            if hashes {
                // One hash per key; a duplicate (rare) puts the first mark back.
                first = firstMarks.updateValue(key.mark, forKey: text)
                if let first { firstMarks[text] = first }
            } else {
                first = pairs[..<index].first { $0.key.scalar?.text == text && !Self.isMergeKey($0.key) }?.key.mark
            }
            if let first {
                report("duplicate key '\(text)' (first defined at \(first))", at: key.mark)
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
