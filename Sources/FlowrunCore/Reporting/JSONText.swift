/// A small, fast JSON writer for event lines (JSONEncoder costs ~20 µs an
/// event, which shows at 20,000 tasks). Keys keep the order they are added in.
struct JSONObjectWriter {
    private(set) var text = "{"
    private var isEmpty = true

    mutating func add(_ key: String, _ value: String?) {
        guard let value else { return }
        addRaw(key, JSONText.quoted(value))
    }

    mutating func add(_ key: String, _ value: Int?) {
        guard let value else { return }
        addRaw(key, String(value))
    }

    mutating func add(_ key: String, _ value: Double?) {
        guard let value else { return }
        addRaw(key, JSONText.number(value))
    }

    mutating func add(_ key: String, _ value: Bool?) {
        guard let value else { return }
        addRaw(key, value ? "true" : "false")
    }

    mutating func add(_ key: String, _ values: [String]?) {
        guard let values else { return }
        addRaw(key, "[" + values.map(JSONText.quoted).joined(separator: ",") + "]")
    }

    /// `value` must already be JSON.
    mutating func addRaw(_ key: String, _ value: String) {
        if !isEmpty { text += "," }
        isEmpty = false
        text += JSONText.quoted(key) + ":" + value
    }

    var result: String { text + "}" }
}

enum JSONText {
    /// One escaping routine for all of flowrun's JSON: `JSONValue`'s.
    static func quoted(_ string: String) -> String {
        var result = ""
        result.reserveCapacity(string.utf8.count + 2)
        JSONValue.writeQuoted(string, to: &result)
        return result
    }

    /// Seconds with millisecond precision, `2` not `2.0`.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int(rounded)) : String(rounded)
    }

    static func object(_ pairs: [(String, String)]) -> String {
        var writer = JSONObjectWriter()
        for (key, value) in pairs { writer.add(key, value) }
        return writer.result
    }
}
