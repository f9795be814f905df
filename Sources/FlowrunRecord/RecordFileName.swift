import FlowrunValues

/// The name a task's files have in the run record: `000042-fetch_tokyo`,
/// for `logs/000/000042-fetch_tokyo.log` and `outputs/000042-fetch_tokyo.1`.
///
/// Unique by construction: the number is the task's node index in the run
/// (each task and fan-out member has its own, members made while the run
/// goes included), so two names never share a file whatever their
/// characters or length (`東京` and `大阪`, `a/b` and `a_b`, 300-byte names
/// that share a prefix). The part after the dash is only for people reading
/// the folder: letters, digits and `_.-+,=@` of the name, others as `_`, at
/// most `readableLimit` bytes. The name itself is in the record
/// (`summary.json` maps each task to its log).
enum RecordFileName {
    static let readableLimit = 40
    /// Tasks whose logs share one folder of `logs/`.
    static let tasksPerShard = 1000

    /// `000` for tasks 0–999, `001` for 1000–1999, …: the folder of `logs/`
    /// that task `index`'s log (and the files beside it) go in, so that no
    /// folder holds more than a thousand tasks' logs, and `logs/` itself a
    /// thousandth of the tasks (1,000 shards for a million).
    static func shard(index: Int) -> String {
        zeroPadded(index / tasksPerShard, width: 3)
    }

    /// The shard of a file named by `stem` (`000042-NAME.log` → `000`),
    /// nil if the name does not start with a task's index.
    static func shard(ofFile name: String) -> String? {
        let digits = name.utf8.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard digits.count >= 6, name.utf8.dropFirst(digits.count).first == UInt8(ascii: "-"),
              let index = Int(String(decoding: digits, as: UTF8.self)) else { return nil }
        return shard(index: index)
    }

    /// `INDEX-READABLE`, the index zero-padded to six digits.
    static func stem(index: Int, name: String) -> String {
        if name.utf8.count <= readableLimit, name.utf8.allSatisfy(isKeptASCII) {
            return String(joining: zeroPadded(index, width: 6), "-", name)  // the common case
        }
        var stem = zeroPadded(index, width: 6) + "-"
        var used = 0
        for scalar in name.unicodeScalars {
            let kept: Unicode.Scalar = keeps(scalar) ? scalar : "_"
            let size = UTF8.width(kept)
            guard used + size <= readableLimit else { break }
            stem.unicodeScalars.append(kept)
            used += size
        }
        return stem
    }

    /// `value` (not negative) in decimal, zero-padded to at least `width` digits.
    private static func zeroPadded(_ value: Int, width: Int) -> String {
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        let width = max(width, digits)
        return String(unsafeUninitializedCapacity: width) { text in
            var rest = value
            for position in stride(from: width - 1, through: 0, by: -1) {
                text[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            return width
        }
    }

    /// ASCII letters, digits and `_.-+,=@`; beyond ASCII, letters and digits
    /// (no marks, spaces, controls or direction overrides).
    private static func keeps(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return isKeptASCII(UInt8(scalar.value)) }
        let properties = scalar.properties
        return properties.isAlphabetic || properties.numericType == .decimal
    }

    private static func isKeptASCII(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "_.-+,=@".utf8.contains(byte)
        }
    }
}
