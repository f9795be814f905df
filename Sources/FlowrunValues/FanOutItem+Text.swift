package import FlowrunModel

/// An item's text, as `${{ item }}`, `$FLOWRUN_ITEM`, the record and
/// `groups.G.results` show it, and items read from a JSON array at run time.
extension FanOutItem {
    /// Text as it is; a JSON literal as written; a record or list as compact JSON
    /// (fields in order — the same text a JSON array's object element had).
    package var text: String {
        switch self {
        case .text(let text), .literal(let text): return text
        case .record, .list:
            var text = ""
            writeJSON(to: &text)
            return text
        }
    }

    private func writeJSON(to text: inout String) {
        switch self {
        case .text(let string): JSONValue.writeQuoted(string, to: &text)
        case .literal(let literal): text += literal
        case .list(let items):
            text += "["
            for (offset, item) in items.enumerated() {
                if offset > 0 { text += "," }
                item.writeJSON(to: &text)
            }
            text += "]"
        case .record(let fields):
            text += "{"
            for (offset, field) in fields.enumerated() {
                if offset > 0 { text += "," }
                JSONValue.writeQuoted(field.key, to: &text)
                text += ":"
                field.value.writeJSON(to: &text)
            }
            text += "}"
        }
    }

    /// A JSON array element as an item: a string is text, an object a record,
    /// an array a list, anything else a literal as written.
    package init(_ json: JSONValue) {
        switch json {
        case .string(let string): self = .text(string)
        case .object(let members): self = .record(members.map { FanOutField(key: $0.key, value: FanOutItem($0.value)) })
        case .array(let items): self = .list(items.map(FanOutItem.init))
        case .number, .bool, .null: self = .literal(json.compactText)
        }
    }
}
