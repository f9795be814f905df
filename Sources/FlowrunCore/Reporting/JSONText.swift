/// A small, fast JSON writer for event lines and the summary (JSONEncoder
/// costs ~20 µs an event, which shows at 100,000 tasks). It writes UTF-8
/// bytes and makes one String at the end. Keys keep the order they are added in.
struct JSONObjectWriter {
    private var bytes: [UInt8]
    private var isEmpty = true

    init() {
        bytes = [UInt8(ascii: "{")]
        bytes.reserveCapacity(256)
    }

    mutating func add(_ key: String, _ value: String?) {
        guard let value else { return }
        addKey(key)
        JSONValue.appendQuoted(value, to: &bytes)
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
        addKey(key)
        bytes.append(UInt8(ascii: "["))
        for (position, value) in values.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONValue.appendQuoted(value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// `value` must already be JSON.
    mutating func addRaw(_ key: String, _ value: String) {
        addKey(key)
        bytes.append(contentsOf: value.utf8)
    }

    private mutating func addKey(_ key: String) {
        if !isEmpty { bytes.append(UInt8(ascii: ",")) }
        isEmpty = false
        JSONValue.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    var result: String {
        var closed = bytes
        closed.append(UInt8(ascii: "}"))
        return String(decoding: closed, as: UTF8.self)
    }
}

enum JSONText {
    /// One escaping routine for all of flowrun's JSON: `JSONValue`'s.
    static func quoted(_ string: String) -> String {
        var text = ""
        JSONValue.writeQuoted(string, to: &text)
        return text
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
