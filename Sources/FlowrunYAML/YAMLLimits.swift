/// The bounds that keep hostile input from costing time or memory.
public struct YAMLLimits: Sendable {
    /// Larger files are refused before parsing.
    public var maxBytes: Int = 16 * 1024 * 1024
    /// Deeper nesting is refused while events stream in, before libyaml's
    /// quadratic flow-collection scanning can cost anything; an alias that
    /// would nest deeper once expanded is refused too.
    public var maxDepth: Int = 100
    /// How many nodes alias expansion may add in total ("billion laughs").
    public var aliasExpansionBudget: Int = 1_000_000
    /// How many problems (duplicate keys, bad merges) one text reports; a
    /// last problem says when there were more.
    public var maxProblems: Int = 100

    public init() {}
}
