/// Writes one string as a YAML scalar that every YAML 1.1 or 1.2 reader reads
/// back as exactly that string: plain when nothing could misread it, else
/// double-quoted with escapes.
///
/// ```swift
/// YAMLScalarEmitter.scalar("alpine:3")        // "\"alpine:3\""
/// YAMLScalarEmitter.scalar("build")           // "build"
/// YAMLScalarEmitter.scalar("30")              // "\"30\"" (never a number)
/// ```
package enum YAMLScalarEmitter {
    /// Plain words that some YAML reader turns into a boolean or a null.
    private static let reserved: Set<String> = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~",
    ]

    /// True when `text` can be written plain and still read back as this string.
    ///
    /// Deliberately narrow: a letter, `_` or `/` first, then letters, digits,
    /// `_`, `-`, `.` and `/`. That rules out numbers, dates, `.inf`, anchors,
    /// tags, comments, flow punctuation and `: `, whatever the reader's schema.
    package static func isPlainSafe(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, !reserved.contains(text.lowercased()) else { return false }
        func isLetter(_ scalar: Unicode.Scalar) -> Bool {
            ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
        }
        guard isLetter(first) || first == "_" || first == "/" else { return false }
        return text.unicodeScalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) || "_-./".unicodeScalars.contains($0) }
    }

    /// `text` as a scalar; a multi-line string is folded after each line break
    /// (with escaped breaks, so the value is unchanged) when `indent` is given.
    package static func scalar(_ text: String, indent: String? = nil) -> String {
        isPlainSafe(text) ? text : doubleQuoted(text, indent: indent)
    }

    /// A double-quoted scalar. With `indent`, each `\n` in the text also ends
    /// the source line: `"a\n\` then `INDENTb"`. YAML drops the escaped break
    /// and the next line's leading blanks, so a blank that starts a line of
    /// the text is written as an escape (`\ ` or `\t`).
    package static func doubleQuoted(_ text: String, indent: String? = nil) -> String {
        var result = "\""
        let scalars = Array(text.unicodeScalars)
        var atLineStart = false
        for (offset, scalar) in scalars.enumerated() {
            if atLineStart, scalar == " " {
                result += "\\ "
                atLineStart = false
                continue
            }
            atLineStart = false
            result += escaped(scalar)
            if scalar == "\n", let indent, offset < scalars.count - 1 {
                result += "\\\n" + indent
                atLineStart = true
            }
        }
        return result + "\""
    }

    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\\": return "\\\\"
        case "\"": return "\\\""
        case "\0": return "\\0"
        case "\u{07}": return "\\a"
        case "\u{08}": return "\\b"
        case "\t": return "\\t"
        case "\n": return "\\n"
        case "\u{0B}": return "\\v"
        case "\u{0C}": return "\\f"
        case "\r": return "\\r"
        case "\u{1B}": return "\\e"
        case "\u{85}": return "\\N"
        case "\u{A0}": return "\\_"
        case "\u{2028}": return "\\L"
        case "\u{2029}": return "\\P"
        default:
            let value = scalar.value
            // C0 and C1 controls, DEL, the BOM and the non-characters YAML may not carry raw.
            if value < 0x20 || (0x7F...0x9F).contains(value) {
                return "\\x" + hex(value, digits: 2)
            }
            if value == 0xFEFF || (0xD800...0xDFFF).contains(value) || value == 0xFFFE || value == 0xFFFF {
                return "\\u" + hex(value, digits: 4)
            }
            return String(scalar)
        }
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
