/// A named meeting point that collects what its members stashed (the seeds'
/// task harmonizer): complete at quorum, fail when quorum is out of reach,
/// or time out with partial results.
public struct JoinDefinition: Sendable {
    public var name: String
    public var location: SourceLocation
    /// Tasks, groups or joins; a group counts as one member.
    public var wait: [Reference] = []
    public var need: Located<JoinQuorum>
    public var timeout: Located<Duration>?
    public var onTimeout: TimeoutPolicy = .continue
    /// nil: every member's whole stash.
    public var report: [ReportItem]?
    public var description: String?

    public init(name: String, location: SourceLocation, need: Located<JoinQuorum>) {
        self.name = name
        self.location = location
        self.need = need
    }
}

/// `need: all | any | N` — how many members must succeed.
public enum JoinQuorum: Sendable, Equatable, CustomStringConvertible {
    case all
    case any
    case count(Int)

    /// The number of successes required out of `members`.
    public func required(of members: Int) -> Int {
        switch self {
        case .all: return members
        case .any: return min(1, members)
        case .count(let count): return count
        }
    }

    public var description: String {
        switch self {
        case .all: return "all"
        case .any: return "any"
        case .count(let count): return String(count)
        }
    }
}

/// `on_timeout:` — whether a timed-out join lets its dependents run.
public enum TimeoutPolicy: String, Sendable, CaseIterable {
    case `continue`, fail
}

/// One `report:` entry: `member.stdout`, `member.outputs.key`, `group.results`, …
public struct ReportItem: Sendable {
    public var member: String
    /// What of the member: `stdout`, `outputs.KEY`, `status`, `exit_code`,
    /// `duration`; `results` of a group; `timed_out` or `succeeded` of a join.
    public var field: String
    public var location: SourceLocation

    package init(member: String, field: String, location: SourceLocation) {
        self.member = member
        self.field = field
        self.location = location
    }

    public var text: String { "\(member).\(field)" }
}
