package import FlowrunModel

/// A computed `foreach:` value's items from its whole text (SPEC §4): a
/// JSON array's elements, else its non-blank lines. The engine reads a
/// task's stdout by these rules; planning reads a `foreach` over `vars`
/// by them too, so both make the same items.
package enum FanOutText {
    /// The items, a JSON array's objects as records (`item.KEY`).
    package static func items(_ text: String) -> [FanOutItem] {
        if let first = text.utf8.first(where: { !ExpressionValue.isSpace($0) }), first == UInt8(ascii: "["),
           case .array(let elements)? = JSONValue.parse(text) {
            return elements.map(FanOutItem.init)
        }
        return lines(text).map(FanOutItem.text)
    }

    /// Lines split at `\n`, one trailing `\r` dropped, blank ones (spaces and tabs only) skipped.
    package static func lines(_ text: String) -> [String] {
        // Bytes, not String slices: String indices snap to Character
        // boundaries, and "\r\n" is one Character.
        text.utf8.split(separator: 0x0A, omittingEmptySubsequences: true).compactMap { line in
            var line = line
            if line.last == 0x0D { line = line.dropLast() }
            guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return nil }
            return String(decoding: line, as: UTF8.self)
        }
    }
}
