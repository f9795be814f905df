/// The functions an expression may call: GitHub Actions' names and meanings
/// (`format`, `join`, `contains`, `startsWith`, `endsWith`, `toJSON`,
/// `fromJSON`), plus `replace`, `split` and `trim`, which GitHub lacks and
/// recipes ported from shell need. docs/FORMAT.md §9 states what each does.
public enum ExpressionFunction: String, Sendable, Hashable, CaseIterable {
    case format, join, contains, startsWith, endsWith, toJSON, fromJSON, replace, split, trim

    /// How many arguments it takes; `format` takes any number after the first.
    public var arity: ClosedRange<Int> {
        switch self {
        case .format: return 1...Int.max
        case .join: return 1...2
        case .contains, .startsWith, .endsWith, .split: return 2...2
        case .toJSON, .fromJSON, .trim: return 1...1
        case .replace: return 3...3
        }
    }

    /// How it is called, for messages: `replace(text, old, new)`.
    public var signature: String {
        switch self {
        case .format: return "format(text, value0, value1, …)"
        case .join: return "join(array, separator = ',')"
        case .contains: return "contains(search, item)"
        case .startsWith: return "startsWith(text, prefix)"
        case .endsWith: return "endsWith(text, suffix)"
        case .toJSON: return "toJSON(value)"
        case .fromJSON: return "fromJSON(text)"
        case .replace: return "replace(text, old, new)"
        case .split: return "split(text, separator)"
        case .trim: return "trim(text)"
        }
    }

    /// The function a name calls; like GitHub, the letter case does not matter.
    public static func named(_ name: String) -> ExpressionFunction? {
        byName[name] ?? byLowercasedName[name.lowercased()]
    }

    /// A hash lookup: `init(rawValue:)` compares the name with each case in
    /// turn, 0.6 % of a JSON dry run of 2,000 tasks with five calls each.
    private static let byName = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })

    private static let byLowercasedName = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue.lowercased(), $0) })
}
