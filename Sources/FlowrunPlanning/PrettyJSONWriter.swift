/// JSON written byte for byte as FoundationEssentials' `JSONEncoder` with
/// `[.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]` writes it (two
/// spaces a level, `"key" : value`, an empty container as `[\n\n  ]`, keys
/// in UTF-8 order, `2` not `2.0`), plus DEL and the C1 controls written as
/// `\u00XX` as `JSONText.escapingControls` does afterwards. The plan JSON of
/// a 2,000-task file went a quarter of `--dry-run --output json`'s time
/// through the encoder's boxed values and dictionaries; this appends bytes.
///
/// The caller writes an object's keys in UTF-8 order: a debug build checks.
struct PrettyJSONWriter {
    private(set) var bytes: [UInt8] = []
    /// A number the encoder would refuse (NaN, infinity): it then writes nothing.
    private(set) var failed = false
    private var depth = 0
    /// Per open container: nothing written in it yet.
    private var empty: [Bool] = []
    #if DEBUG
    private var lastKeys: [[UInt8]?] = []
    #endif

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    // MARK: containers

    mutating func object(_ body: (inout PrettyJSONWriter) -> Void) {
        open(UInt8(ascii: "{"))
        body(&self)
        close(UInt8(ascii: "}"))
    }

    mutating func array(_ body: (inout PrettyJSONWriter) -> Void) {
        open(UInt8(ascii: "["))
        body(&self)
        close(UInt8(ascii: "]"))
    }

    mutating func array(_ strings: [String]) {
        array { writer in
            for string in strings { writer.element(); writer.string(string) }
        }
    }

    /// `{"KEY" : "VALUE", …}` in UTF-8 order of the keys.
    mutating func object(_ dictionary: [String: String]) {
        object { writer in
            for (key, value) in dictionary.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                writer.key(key)
                writer.string(value)
            }
        }
    }

    /// Before each element of an array.
    mutating func element() {
        separate()
    }

    /// Before each value of an object: `"key" : `.
    mutating func key(_ key: String) {
        #if DEBUG
        let utf8 = Array(key.utf8)
        if let last = lastKeys[lastKeys.count - 1] {
            precondition(last.lexicographicallyPrecedes(utf8), "PrettyJSONWriter: key \(key) written after \(String(decoding: last, as: UTF8.self))")
        }
        lastKeys[lastKeys.count - 1] = utf8
        #endif
        separate()
        string(key)
        bytes.append(contentsOf: [0x20, UInt8(ascii: ":"), 0x20])
    }

    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        bytes.append(0x0A)
        depth += 1
        empty.append(true)
        #if DEBUG
        lastKeys.append(nil)
        #endif
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(0x0A)
        depth -= 1
        indent()
        bytes.append(bracket)
        empty.removeLast()
        #if DEBUG
        lastKeys.removeLast()
        #endif
    }

    private mutating func separate() {
        if empty[empty.count - 1] {
            empty[empty.count - 1] = false
        } else {
            bytes.append(UInt8(ascii: ","))
            bytes.append(0x0A)
        }
        indent()
    }

    private mutating func indent() {
        for _ in 0..<depth { bytes.append(0x20); bytes.append(0x20) }
    }

    // MARK: values

    mutating func string(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var start = 0
            var index = 0
            let count = utf8.count
            while index < count {
                let byte = utf8[index]
                let escape: Escape
                if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte != 0x7F && byte != 0xC2 {
                    index += 1
                    continue
                } else if byte == 0xC2 {
                    // U+0080–U+009F (a CSI to a terminal is U+009B): `\u00XX`.
                    guard index + 1 < count, (0x80..<0xA0).contains(utf8[index + 1]) else {
                        index += 1
                        continue
                    }
                    escape = .unicode(utf8[index + 1], width: 2)
                } else {
                    escape = Self.escape(of: byte)
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                switch escape {
                case .short(let letter):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(letter)
                case .unicode(let value, let width):
                    bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(Self.hex(value >> 4))
                    bytes.append(Self.hex(value & 0xF))
                    index += width - 1
                }
                index += 1
                start = index
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<count]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func int(_ value: Int) {
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func uint(_ value: UInt64) {
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func bool(_ value: Bool) {
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// As the encoder: the shortest text that reads back the same, `.0` dropped.
    mutating func double(_ value: Double) {
        guard value.isFinite else {
            failed = true
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    private enum Escape {
        case short(UInt8)
        /// `\u00XX` for `value`, replacing `width` bytes of UTF-8.
        case unicode(UInt8, width: Int)
    }

    private static func escape(of byte: UInt8) -> Escape {
        switch byte {
        case UInt8(ascii: "\""): return .short(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): return .short(UInt8(ascii: "\\"))
        case 0x08: return .short(UInt8(ascii: "b"))
        case 0x0C: return .short(UInt8(ascii: "f"))
        case 0x0A: return .short(UInt8(ascii: "n"))
        case 0x0D: return .short(UInt8(ascii: "r"))
        case 0x09: return .short(UInt8(ascii: "t"))
        default: return .unicode(byte, width: 1)
        }
    }

    private static func hex(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
