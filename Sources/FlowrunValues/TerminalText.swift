/// Text as a terminal shows it: how many columns it takes, how to cut it to a
/// width without wrapping, and how to keep a task's bytes from steering the
/// terminal (a log line may carry colours, `\r` progress or a stray escape).
package enum TerminalText {
    /// Columns `text` takes on a terminal: 0 for combining marks and format
    /// characters, 2 for East Asian wide and emoji, 1 otherwise.
    package static func width(_ text: some StringProtocol) -> Int {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text.utf8.count }
        return text.reduce(0) { $0 + width(of: $1) }
    }

    package static func width(of character: Character) -> Int {
        if character.isASCII { return character.asciiValue! >= 0x20 && character.asciiValue! < 0x7F ? 1 : 0 }
        let scalars = character.unicodeScalars
        let first = scalars.first!
        if first.value < 0x20 || (0x7F..<0xA0).contains(first.value) { return 0 }
        if scalars.contains(where: { $0.value == 0xFE0F }) || first.properties.isEmojiPresentation { return 2 }
        switch first.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: return isWide(first.value) ? 2 : 1
        }
    }

    /// East Asian Wide and Fullwidth blocks (UAX #11), the common ranges.
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF,
             0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3,
             0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// `text` with every control character shown escaped, so that what a
    /// task or a workflow's items hold can neither steer the terminal nor
    /// forge a line in a CI log: `\n`, `\r`, `\e` (ESC), `\xHH` for the
    /// rest of C0 and DEL, `\u{85}` for C1. Tabs stay (they cannot forge a
    /// line). Backslashes are not doubled: this is for reading, not parsing.
    package static func escaped(_ text: String) -> String {
        guard needsEscaping(text) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: result += "\\n"
            case 0x0D: result += "\\r"
            case 0x1B: result += "\\e"
            case 0x09: result.unicodeScalars.append(scalar)
            case 0..<0x20, 0x7F: result += "\\x" + hex(scalar.value)
            case 0x80..<0xA0: result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// A message as flowrun prints it on stderr, control characters escaped
    /// as `escaped` does except its own line breaks: what a user typed (an
    /// argument, a file name) and flowrun echoes cannot steer the terminal.
    package static func escapedLines(_ text: String) -> String {
        guard needsEscaping(text) else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { escaped(String($0)) }.joined(separator: "\n")
    }

    /// A line of a task's log as a terminal shows it: `escaped`, and one
    /// starting with `::` starts with `\x3a:` instead (a command to some CI
    /// runners, `::error::`), as `escapedName` does for names.
    package static func escapedLine(_ line: String) -> String {
        escapedName(line)
    }

    /// `escaped(name)`, and a name that starts with `::` starts with `\x3a:`
    /// instead: names begin console lines (`--stream`'s `name | line`), and a
    /// line starting with `::` is a command to some CI runners (`::error::`).
    package static func escapedName(_ name: String) -> String {
        let escaped = escaped(name)
        guard escaped.hasPrefix("::") else { return escaped }
        return "\\x3a" + escaped.dropFirst()
    }

    private static func needsEscaping(_ text: String) -> Bool {
        var sawMultibyte = false
        for byte in text.utf8 {
            if byte < 0x20 && byte != 0x09 || byte == 0x7F { return true }
            if byte >= 0x80 { sawMultibyte = true }
        }
        // C1 controls are two bytes in UTF-8 (0xC2 0x80–0x9F).
        return sawMultibyte && text.unicodeScalars.contains { (0x80..<0xA0).contains($0.value) }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(value >> 4)], digits[Int(value & 0xF)]])
    }

    /// `text` with whatever would move the cursor or change colours taken
    /// out: escape sequences (CSI, OSC, two-byte), other control characters,
    /// and everything before a `\r` (what a terminal would have overwritten).
    /// Tabs become a space.
    package static func sanitized(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) && !text.unicodeScalars.contains(where: { (0x80..<0xA0).contains($0.value) }) {
            return text
        }
        var visible = Substring(text)
        while visible.hasSuffix("\r") || visible.hasSuffix("\r\n") { visible = visible.dropLast() }
        if let lastReturn = visible.lastIndex(where: { $0 == "\r" || $0 == "\r\n" }) {
            visible = visible[visible.index(after: lastReturn)...]
        }
        var result = ""
        var scalars = visible.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            switch scalar.value {
            case 0x09:
                result += " "
            case 0x1B:
                skipEscape(&scalars)
            case 0x9B:  // a one-byte CSI
                skipEscape(&scalars, alreadyInCSI: true)
            case 0..<0x20, 0x7F, 0x80..<0xA0:
                continue
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Consumes the rest of an escape sequence whose ESC was just read.
    private static func skipEscape(_ scalars: inout String.UnicodeScalarView.SubSequence.Iterator, alreadyInCSI: Bool = false) {
        if !alreadyInCSI {
            guard let next = scalars.next() else { return }
            switch next {
            case "[": break
            case "]", "P", "X", "^", "_":
                // OSC and friends run to BEL or ST (ESC \).
                while let scalar = scalars.next() {
                    if scalar.value == 0x07 || scalar.value == 0x9C { return }
                    if scalar.value == 0x1B { _ = scalars.next(); return }
                }
                return
            default:
                return  // a two-byte sequence: ESC and one more
            }
        }
        // CSI: parameter and intermediate bytes, then one final byte 0x40–0x7E.
        while let scalar = scalars.next() {
            if (0x40...0x7E).contains(scalar.value) { return }
        }
    }

    /// `text` cut to at most `columns` columns, ending in `…` when cut.
    package static func truncated(_ text: String, to columns: Int) -> String {
        guard columns > 0 else { return "" }
        let total = width(text)
        guard total > columns else { return text }
        var result = ""
        var used = 0
        for character in text {
            let characterWidth = width(of: character)
            if used + characterWidth > columns - 1 { break }
            result.append(character)
            used += characterWidth
        }
        return result + "…"
    }

    /// `text` cut or padded with spaces to exactly `columns` columns.
    package static func fitted(_ text: String, to columns: Int) -> String {
        let cut = truncated(text, to: columns)
        let missing = columns - width(cut)
        return missing > 0 ? cut + String(repeating: " ", count: missing) : cut
    }

    /// `text` right-aligned in `columns` columns (never cut).
    package static func padded(left text: String, to columns: Int) -> String {
        let missing = columns - width(text)
        return missing > 0 ? String(repeating: " ", count: missing) + text : text
    }
}
