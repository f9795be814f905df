/// A small, fast JSON writer for event lines and the summary (JSONEncoder
/// costs ~20 µs an event, which shows at 100,000 tasks). It writes UTF-8
/// bytes, numbers included, and makes one String at the end, or hands the
/// bytes back (`finish`) to a buffer of many lines. Keys keep the order they
/// are added in.
package struct JSONObjectWriter {
    private var bytes: [UInt8]
    private var isEmpty = true

    package init() {
        bytes = [UInt8(ascii: "{")]
        bytes.reserveCapacity(256)
    }

    // Keys are flowrun's own names, written as they are (`StaticString`:
    // no escaping to check); `add(key:_:)` takes any other text.

    package mutating func add(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        addKey(key)
        JSONValue.appendQuoted(value, to: &bytes)
    }

    package mutating func add(_ key: StaticString, _ value: Int?) {
        guard let value else { return }
        addKey(key)
        JSONText.appendDecimal(value, to: &bytes)
    }

    package mutating func add(_ key: StaticString, _ value: Double?) {
        guard let value else { return }
        addKey(key)
        JSONText.appendNumber(value, to: &bytes)
    }

    /// `write` appends a JSON value.
    package mutating func add(_ key: StaticString, writing write: (inout [UInt8]) -> Void) {
        addKey(key)
        write(&bytes)
    }

    package mutating func add(_ key: StaticString, _ value: Bool?) {
        guard let value else { return }
        addKey(key)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    package mutating func add(_ key: StaticString, _ values: [String]?) {
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
    package mutating func addRaw(_ key: StaticString, _ value: String) {
        addKey(key)
        bytes.append(contentsOf: value.utf8)
    }

    /// A key that is not flowrun's own (an output's name, a status): escaped.
    package mutating func add(key: String, _ value: String) {
        addKey(escaping: key)
        JSONValue.appendQuoted(value, to: &bytes)
    }

    package mutating func add(key: String, _ value: Int) {
        addKey(escaping: key)
        JSONText.appendDecimal(value, to: &bytes)
    }

    private mutating func addKey(escaping key: String) {
        addComma()
        JSONValue.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func addKey(_ key: StaticString) {
        addComma()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func addComma() {
        if !isEmpty { bytes.append(UInt8(ascii: ",")) }
        isEmpty = false
    }

    package var result: String {
        var closed = bytes
        closed.append(UInt8(ascii: "}"))
        return String(decoding: closed, as: UTF8.self)
    }

    /// The object's bytes, closed.
    package consuming func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}

package enum JSONText {
    /// JSON that Foundation's encoder wrote, with DEL and the C1 controls
    /// (U+0080–U+009F) it leaves raw written as `\u00XX`, as flowrun's own
    /// writer does (`JSONValue.appendQuoted`): U+009B is a CSI to a
    /// terminal. Raw, they can only be inside strings, so each is replaced.
    package static func escapingControls(_ json: String) -> String {
        guard json.utf8.contains(where: { $0 == 0x7F || $0 == 0xC2 }) else { return json }
        var result = ""
        result.reserveCapacity(json.utf8.count + 16)
        for scalar in json.unicodeScalars {
            if scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) {
                result += "\\u00" + (scalar.value < 0x80 ? "7f" : String(scalar.value, radix: 16))
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// One escaping routine for all of flowrun's JSON: `JSONValue`'s.
    package static func quoted(_ string: String) -> String {
        var text = ""
        JSONValue.writeQuoted(string, to: &text)
        return text
    }

    /// Seconds with millisecond precision, `2` not `2.0`.
    package static func number(_ value: Double) -> String {
        var bytes: [UInt8] = []
        appendNumber(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `number`'s text, written as bytes: a run writes a few per task, and
    /// `String(Double)` is the slow part of an event line.
    package static func appendNumber(_ value: Double, to bytes: inout [UInt8]) {
        guard value.isFinite else {
            bytes.append(contentsOf: "null".utf8)
            return
        }
        let rounded = (value * 1000).rounded() / 1000
        guard abs(rounded) < 1e12 else {
            // Out of the range where millis fit the shortest form exactly.
            let text = rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int(rounded)) : String(rounded)
            bytes.append(contentsOf: text.utf8)
            return
        }
        // Below 1e12 a number of milliseconds has at most 15 digits, so its
        // shortest round-trip form is exactly "whole.fraction".
        var millis = Int((value * 1000).rounded())
        if millis < 0 {
            bytes.append(UInt8(ascii: "-"))
            millis = -millis
        }
        appendDecimal(millis / 1000, to: &bytes)
        var fraction = millis % 1000
        guard fraction > 0 else { return }
        bytes.append(UInt8(ascii: "."))
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        var divisor = 1
        for _ in 1..<digits { divisor *= 10 }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(fraction / divisor % 10))
            divisor /= 10
        }
    }

    /// A whole number's decimal digits.
    package static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        guard value != 0 else {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            for position in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[position]) }
        }
    }

    package static func object(_ pairs: [(String, String)]) -> String {
        var writer = JSONObjectWriter()
        for (key, value) in pairs { writer.add(key: key, value) }
        return writer.result
    }
}
