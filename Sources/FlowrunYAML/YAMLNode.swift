/// One node of a loaded YAML document, with the position it came from.
///
/// Aliases are already expanded (within the loader's budget) and merge keys
/// (`<<`) already applied, so consumers see plain trees.
public struct YAMLNode: Sendable {
    public enum Content: Sendable {
        case scalar(YAMLScalar)
        case sequence([YAMLNode])
        case mapping([Pair])
    }

    /// A key and its value, each with its own mark.
    public struct Pair: Sendable {
        public var key: YAMLNode
        public var value: YAMLNode

        public init(key: YAMLNode, value: YAMLNode) {
            self.key = key
            self.value = value
        }
    }

    public var content: Content
    public var mark: Mark
    /// The explicit tag, e.g. `tag:yaml.org,2002:str` for `!!str`; nil when none.
    public var tag: String? {
        get { writtenTag?.tag }
        set { writtenTag = newValue.map(WrittenTag.init) }
    }
    /// Behind a reference, as tags are rare: a node is 40 bytes, not 56
    /// (the whole document is held while a workflow is decoded).
    private var writtenTag: WrittenTag?

    private final class WrittenTag: Sendable {
        let tag: String

        init(_ tag: String) {
            self.tag = tag
        }
    }

    public init(_ content: Content, at mark: Mark, tag: String? = nil) {
        self.content = content
        self.mark = mark
        self.tag = tag
    }

    /// The scalar, when this node is one.
    public var scalar: YAMLScalar? {
        if case .scalar(let scalar) = content { return scalar }
        return nil
    }

    /// The items, when this node is a sequence.
    public var sequence: [YAMLNode]? {
        if case .sequence(let items) = content { return items }
        return nil
    }

    /// The pairs, when this node is a mapping.
    public var mapping: [Pair]? {
        if case .mapping(let pairs) = content { return pairs }
        return nil
    }

    /// A word for the kind of node, for messages ("expected a mapping, found a sequence").
    public var kindDescription: String {
        switch content {
        case .scalar(let scalar): return scalar.isNull && tag == nil ? "null" : "a scalar"
        case .sequence: return "a sequence"
        case .mapping: return "a mapping"
        }
    }
}

/// A scalar's text and how it was written.
public struct YAMLScalar: Hashable, Sendable {
    public enum Style: Sendable, Hashable {
        case plain, singleQuoted, doubleQuoted, literal, folded
    }

    public var text: String
    public var style: Style

    public init(_ text: String, style: Style = .plain) {
        self.text = text
        self.style = style
    }

    /// A plain `~`, `null` or empty scalar (YAML's core schema null).
    public var isNull: Bool {
        style == .plain && (text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL")
    }
}
