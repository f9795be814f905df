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
    /// `sequential: true`: members run one at a time in written order (static
    /// members, then fan-out members in item order); a failure skips the rest.
    package var sequential = false
    /// `when:` and `if:`, as a task's (SPEC §15): whether the group starts
    /// at all once its needs have settled; else it and its members are skipped.
    public var when: RunCondition = .success
    public var condition: Located<Expression>?
    /// `aliases: [b]` — other names the group can be run by (SPEC §15).
    package var aliases: [Reference] = []
    /// `executor:` — every member's, unless a member sets its own.
    public var executor: Located<ExecutorKind>?

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
    /// `split:` — how a computed `foreach` string becomes items (nil: a JSON
    /// array, else one item per non-empty line).
    public var split: FanOutSplit? = nil
    /// For a `matrix:`: its axes, in the order written (the combinations are `source`).
    public var matrixAxes: [String]? = nil

    package init(source: FanOutSource, template: TaskDefinition, location: SourceLocation) {
        self.source = source
        self.template = template
        self.location = location
    }
}

/// `split: whitespace | lines | SEPARATOR` on a `foreach` (go-task's `for.split`).
public enum FanOutSplit: Sendable, Hashable {
    /// Runs of spaces, tabs and line breaks.
    case whitespace
    /// Line by line (blank lines skipped), never read as JSON.
    case lines
    /// A literal separator; each part trimmed of surrounding whitespace, empty parts skipped.
    case separator(String)

    public var text: String {
        switch self {
        case .whitespace: return "whitespace"
        case .lines: return "lines"
        case .separator(let separator): return separator
        }
    }

    /// The items `text` splits into.
    public func items(_ text: String) -> [String] {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0B || byte == 0x0C }
        switch self {
        case .whitespace:
            return text.utf8.split(whereSeparator: isSpace).map { String(decoding: $0, as: UTF8.self) }
        case .lines:
            return text.utf8.split(separator: 0x0A).compactMap { line in
                var line = line
                if line.last == 0x0D { line = line.dropLast() }
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { return nil }
                return String(decoding: line, as: UTF8.self)
            }
        case .separator(let separator):
            let separator = Array(separator.utf8)
            let bytes = Array(text.utf8)
            var parts: [String] = []
            var start = 0
            var index = 0
            func take(_ end: Int) {
                var low = start, high = end
                while low < high, isSpace(bytes[low]) { low += 1 }
                while high > low, isSpace(bytes[high - 1]) { high -= 1 }
                if low < high { parts.append(String(decoding: bytes[low..<high], as: UTF8.self)) }
            }
            while !separator.isEmpty, index + separator.count <= bytes.count {
                if bytes[index..<index + separator.count].elementsEqual(separator) {
                    take(index)
                    index += separator.count
                    start = index
                } else {
                    index += 1
                }
            }
            take(bytes.count)
            return parts
        }
    }
}

/// Where a fan-out's items come from.
public enum FanOutSource: Sendable {
    /// `foreach: [a, b, c]`
    case list([String])
    /// `foreach: [{os: linux}, …]` or a `matrix:` — records known before the run.
    case records([FanOutItem])
    /// `foreach: {range: [1, 100]}` — both ends included.
    case range(Int, Int)
    /// `foreach: ${{ tasks.list.stdout }}` — known only at run time: a JSON
    /// array if it parses as one, else one item per non-empty line.
    case expression(Template)

    /// The member count when it is known before the run.
    public var staticCount: Int? {
        switch self {
        case .list(let items): return items.count
        case .records(let items): return items.count
        case .range(let low, let high): return high >= low ? high - low + 1 : 0
        case .expression: return nil
        }
    }
}
