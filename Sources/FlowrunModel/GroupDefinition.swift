/// A set of tasks that finishes together (a dispatch group), with its own
/// concurrency limit and deadline, and static and/or fan-out members.
public struct GroupDefinition: Sendable {
    public var name: String
    public var location: SourceLocation
    /// At most this many members running at once.
    public var concurrency: Int?
    /// Group deadline: unfinished members are cancelled.
    public var timeout: Located<Duration>?
    /// Every member waits for these.
    public var needs: [Reference] = []
    public var members: [TaskDefinition] = []
    public var fanOut: FanOut?
    public var description: String?

    public init(name: String, location: SourceLocation) {
        self.name = name
        self.location = location
    }
}

/// `foreach:` + `task:` — one member per item, named `GROUP[INDEX]` unless the
/// template has a `name:`.
public struct FanOut: Sendable {
    public var source: FanOutSource
    public var template: TaskDefinition
    public var location: SourceLocation

    package init(source: FanOutSource, template: TaskDefinition, location: SourceLocation) {
        self.source = source
        self.template = template
        self.location = location
    }
}

/// Where a fan-out's items come from.
public enum FanOutSource: Sendable {
    /// `foreach: [a, b, c]`
    case list([String])
    /// `foreach: {range: [1, 100]}` — both ends included.
    case range(Int, Int)
    /// `foreach: ${{ tasks.list.stdout }}` — known only at run time: a JSON
    /// array if it parses as one, else one item per non-empty line.
    case expression(Template)

    /// The member count when it is known before the run.
    public var staticCount: Int? {
        switch self {
        case .list(let items): return items.count
        case .range(let low, let high): return high >= low ? high - low + 1 : 0
        case .expression: return nil
        }
    }
}
