/// The forms a secret commonly takes when a task prints it through another
/// program, each masked like the value itself (SPEC §11): JSON-escaped (jq's
/// `\"`, PHP's `\/`, Go's `\u0026`, Python's `\u00e4`), URL-encoded (`%2F`
/// or `%2f`, `+` or `%20` for a space) and base64 (standard and URL-safe,
/// with or without padding, at each of the three byte alignments it can
/// have inside a longer encoded text).
///
/// Only forms that differ from the value are added, so a secret of letters
/// and digits costs its base64 fragments and nothing else.
enum SecretEncodings {
    /// A base64 fragment shorter than this is not masked: five characters
    /// recur by chance every gigabyte of base64, and would blank unrelated text.
    static let shortestBase64Fragment = 6

    static func forms(of value: String) -> Set<[UInt8]> {
        var forms = Set<[UInt8]>()
        for slash in [false, true] {
            for nonASCII in [JSONNonASCII.raw, .lowerHex, .upperHex] {
                for html in [false, true] {
                    forms.insert(json(value, escapingSlash: slash, nonASCII: nonASCII, escapingHTML: html))
                }
            }
        }
        let bytes = Array(value.utf8)
        for kept in percentKept {
            for upper in [true, false] {
                for plus in [false, true] {
                    forms.insert(percent(bytes, keeping: kept, upper: upper, plusForSpace: plus))
                }
            }
        }
        for alphabet in [base64Standard, base64URLSafe] {
            forms.formUnion(base64Fragments(of: bytes, alphabet: alphabet))
        }
        forms.remove(bytes)
        return forms.filter { $0.count >= SecretMasker.minimumLength }
    }

    // MARK: - JSON

    enum JSONNonASCII { case raw, lowerHex, upperHex }

    /// `value` as the inside of a JSON string, escaped one common way.
    static func json(_ value: String, escapingSlash: Bool, nonASCII: JSONNonASCII, escapingHTML: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count + 8)
        func unit(_ code: UInt32) {
            let digits = Array((nonASCII == .upperHex ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
            out += [0x5C, UInt8(ascii: "u")]
            for shift in stride(from: 12, through: 0, by: -4) { out.append(digits[Int((code >> UInt32(shift)) & 0xF)]) }
        }
        for scalar in value.unicodeScalars {
            let code = scalar.value
            switch code {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x2F: out += escapingSlash ? [0x5C, 0x2F] : [0x2F]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0x08: out += [0x5C, UInt8(ascii: "b")]
            case 0x0C: out += [0x5C, UInt8(ascii: "f")]
            case 0..<0x20: unit(code)
            case _ where escapingHTML && [0x3C, 0x3E, 0x26, 0x2028, 0x2029].contains(code): unit(code)
            case 0x80... where nonASCII != .raw:
                if code > 0xFFFF {
                    let offset = code - 0x10000
                    unit(0xD800 + (offset >> 10))
                    unit(0xDC00 + (offset & 0x3FF))
                } else {
                    unit(code)
                }
            default: out += Array(String(scalar).utf8)
            }
        }
        return out
    }

    // MARK: - URL encoding

    static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
    /// RFC 3986's unreserved set; JavaScript's encodeURIComponent; Python's quote (keeps `/`); Java's URLEncoder.
    static let percentKept: [Set<UInt8>] = [
        unreserved,
        unreserved.union("!'()*".utf8),
        unreserved.union("/".utf8),
        unreserved.subtracting("~".utf8).union("*".utf8),
    ]

    static func percent(_ bytes: [UInt8], keeping kept: Set<UInt8>, upper: Bool, plusForSpace: Bool) -> [UInt8] {
        let digits = Array((upper ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 3)
        for byte in bytes {
            if kept.contains(byte) {
                out.append(byte)
            } else if byte == 0x20 && plusForSpace {
                out.append(UInt8(ascii: "+"))
            } else {
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            }
        }
        return out
    }

    // MARK: - Base64

    static let base64Standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    static let base64URLSafe = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The value encoded on its own (padded and not), and, for each of the
    /// three places it may start at inside a longer encoded text, the
    /// characters that depend on its bytes alone.
    static func base64Fragments(of bytes: [UInt8], alphabet: [UInt8]) -> Set<[UInt8]> {
        var fragments = Set<[UInt8]>()
        let whole = base64(bytes, alphabet: alphabet)
        fragments.insert(whole)
        let padding = (3 - bytes.count % 3) % 3
        fragments.insert(whole + [UInt8](repeating: UInt8(ascii: "="), count: padding))
        for lead in 0..<3 {
            let encoded = base64([UInt8](repeating: 0, count: lead) + bytes, alphabet: alphabet)
            // Character j holds bits 6j..<6j+6; keep those inside the value's bits 8·lead..<8·(lead+count).
            let first = (8 * lead + 5) / 6
            let end = (8 * (lead + bytes.count)) / 6
            guard end - first >= shortestBase64Fragment else { continue }
            fragments.insert(Array(encoded[first..<end]))
        }
        return fragments
    }

    /// Unpadded base64 of `bytes`.
    static func base64(_ bytes: [UInt8], alphabet: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = (UInt32(bytes[index]) << 16)
                | (index + 1 < bytes.count ? UInt32(bytes[index + 1]) << 8 : 0)
                | (index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0)
            let characters = min(4, (bytes.count - index) * 8 / 6 + 1)
            for position in 0..<characters { out.append(alphabet[Int((chunk >> UInt32(18 - 6 * position)) & 0x3F)]) }
            index += 3
        }
        return out
    }
}
