/// One item of a fan-out: text, or a record of named fields (a mapping item,
/// a matrix combination, a JSON object read at run time).
///
/// `${{ item }}` and `$FLOWRUN_ITEM` give an item's text: text as it is, a
/// record or list as compact JSON. `${{ item.KEY }}` (and `item.A.B` into a
/// nested record) reads one field's text.
public indirect enum FanOutItem: Sendable, Hashable {
    /// A string (static scalars keep the text as written: `3.10` stays `3.10`).
    case text(String)
    /// A JSON number, `true`, `false` or `null` read at run time, as written.
    case literal(String)
    /// Fields in the order written.
    case record([FanOutField])
    /// A list inside a record.
    case list([FanOutItem])

    /// The text of a scalar (text or literal); nil for a record or list.
    public var scalarText: String? {
        switch self {
        case .text(let text), .literal(let text): return text
        case .record, .list: return nil
        }
    }

    /// A short form for messages and `--dry-run`: `{os: linux, py: 3.12}`.
    package var displayText: String {
        switch self {
        case .text(let text), .literal(let text): return text
        case .record(let fields): return "{" + fields.map { "\($0.key): \($0.value.displayText)" }.joined(separator: ", ") + "}"
        case .list(let items): return "[" + items.map(\.displayText).joined(separator: ", ") + "]"
        }
    }

    /// The fields of a record; empty for anything else.
    public var fields: [FanOutField] {
        if case .record(let fields) = self { return fields }
        return []
    }

    /// The value at `path` (`["a", "b"]` for `item.a.b`), or nil when the item has no such field.
    public func field(at path: [String]) -> FanOutItem? {
        var value = self
        for key in path {
            guard case .record(let fields) = value, let next = fields.last(where: { $0.key == key }) else { return nil }
            value = next.value
        }
        return value
    }
}

/// One named field of a record item.
public struct FanOutField: Sendable, Hashable {
    public var key: String
    public var value: FanOutItem

    public init(key: String, value: FanOutItem) {
        self.key = key
        self.value = value
    }
}
