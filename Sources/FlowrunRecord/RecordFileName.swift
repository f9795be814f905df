/// The name a task's files have in the run record: `000042-fetch_tokyo`,
/// for `logs/000042-fetch_tokyo.log` and `outputs/000042-fetch_tokyo.1`.
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

    /// `INDEX-READABLE`, the index zero-padded to six digits.
    static func stem(index: Int, name: String) -> String {
        var stem = ""
        stem.reserveCapacity(7 + min(name.utf8.count, readableLimit))
        let digits = String(index)
        if digits.utf8.count < 6 { stem += String(repeating: "0", count: 6 - digits.utf8.count) }
        stem += digits
        stem += "-"
        if name.utf8.count <= readableLimit, name.utf8.allSatisfy(isKeptASCII) {
            stem += name  // the common case, checked without building a new string
            return stem
        }
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
