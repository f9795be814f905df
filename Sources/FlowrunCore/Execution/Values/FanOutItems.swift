/// Turns a computed `foreach:` value into the fan-out's items (SPEC §4).
///
/// - If the whole text (surrounding whitespace aside) is a JSON array, each
///   element is an item: a string element is its text, any other element
///   its compact JSON (`1.50`, `true`, `null`, `{"a":[1,2]}` — numbers as
///   written, object members in order). `[]` is no items: an empty fan-out.
/// - Otherwise (including JSON that is not an array, or is malformed), each
///   line is an item: lines split at `\n`, one trailing `\r` dropped, blank
///   lines (empty or only spaces and tabs) skipped, other lines kept exactly,
///   inner and edge spaces included.
public enum FanOutItems {
    public static func parse(_ text: String) -> [String] {
        if let first = text.utf8.first(where: { !ExpressionValue.isSpace($0) }), first == UInt8(ascii: "["),
           case .array(let elements)? = JSONValue.parse(text) {
            return elements.map { element in
                if case .string(let string) = element { return string }
                return element.compactText
            }
        }
        return lines(text)
    }

    private static func lines(_ text: String) -> [String] {
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
