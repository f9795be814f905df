import FlowrunModel

/// An item's compact JSON for a manifest (`{{item.item}}`), written as
/// flowrun writes `${{ item }}`: fields in order, strings escaped per RFC 8259.
enum ArgoItemJSON {
    static func text(_ item: FanOutItem) -> String {
        var text = ""
        write(item, to: &text)
        return text
    }

    private static func write(_ item: FanOutItem, to text: inout String) {
        switch item {
        case .text(let string): quote(string, to: &text)
        case .literal(let literal): text += literal
        case .list(let items):
            text += "[" + items.map { Self.text($0) }.joined(separator: ",") + "]"
        case .record(let fields):
            text += "{"
            for (offset, field) in fields.enumerated() {
                if offset > 0 { text += "," }
                quote(field.key, to: &text)
                text += ":"
                write(field.value, to: &text)
            }
            text += "}"
        }
    }

    private static func quote(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
