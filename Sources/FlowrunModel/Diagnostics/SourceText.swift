/// A file's text as lines, to show the line of a diagnostic and to find the
/// exact position of a part of a scalar (an expression inside a `run:` block).
public struct SourceText: Sendable {
    public var file: String
    public var lines: [Substring]

    public init(file: String, bytes: [UInt8]) {
        self.file = file
        let text = Substring(String(decoding: bytes, as: UTF8.self))
        // The breaks libyaml counts lines by (LF, CR, CRLF, NEL, LS, PS), so
        // line numbers agree with its marks; found in the UTF-8 bytes, which
        // is far cheaper than splitting by Character on a large file.
        var lines: [Substring] = []
        // Room for every line at once (a CR or LF ends at most one): grown by
        // doubling, a 20,000-task file's 40,000 lines held up to 2 MB.
        lines.reserveCapacity(bytes.reduce(1) { $0 + ($1 == 0x0A || $1 == 0x0D ? 1 : 0) })
        let utf8 = text.utf8
        var lineStart = utf8.startIndex
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            var breakEnd: String.Index?
            switch byte {
            case 0x0A:
                breakEnd = utf8.index(after: index)
            case 0x0D:
                let next = utf8.index(after: index)
                breakEnd = next < utf8.endIndex && utf8[next] == 0x0A ? utf8.index(after: next) : next
            case 0xC2:
                let next = utf8.index(after: index)
                if next < utf8.endIndex, utf8[next] == 0x85 { breakEnd = utf8.index(after: next) }
            case 0xE2:
                let second = utf8.index(after: index)
                if second < utf8.endIndex, utf8[second] == 0x80 {
                    let third = utf8.index(after: second)
                    if third < utf8.endIndex, utf8[third] == 0xA8 || utf8[third] == 0xA9 { breakEnd = utf8.index(after: third) }
                }
            default:
                break
            }
            if let breakEnd {
                lines.append(text[lineStart..<index])
                lineStart = breakEnd
                index = breakEnd
            } else {
                index = utf8.index(after: index)
            }
        }
        lines.append(text[lineStart...])
        self.lines = lines
    }

    /// A place in the text to search on from: a line, a position in it and its column.
    public struct Cursor: Sendable {
        var line: Int
        var index: Substring.Index
        public var column: Int

        public var location: (line: Int, column: Int) { (line + 1, column) }
    }

    /// A cursor at a 1-based line and column (nil past the end).
    public func cursor(at location: SourceLocation) -> Cursor? {
        let lineIndex = location.line - 1
        guard lines.indices.contains(lineIndex) else { return nil }
        let line = lines[lineIndex]
        let offset = max(0, location.column - 1)
        if let index = Self.asciiIndex(in: line, from: line.startIndex, offsetBy: offset) {
            return Cursor(line: lineIndex, index: index, column: offset + 1)
        }
        let clamped = min(offset, line.count)
        return Cursor(line: lineIndex, index: line.index(line.startIndex, offsetBy: clamped), column: clamped + 1)
    }

    /// The next place at or after `cursor` where `snippet` occurs verbatim,
    /// searching at most `lineLimit` lines; nil when it is not found (e.g. a
    /// quoted scalar with escapes). Successive searches from the returned
    /// cursor cost time in proportion to the text passed over, not to the
    /// number of searches.
    public func find(_ snippet: String, from cursor: Cursor, lineLimit: Int = 10_000) -> Cursor? {
        guard !snippet.isEmpty else { return nil }
        var cursor = cursor
        let lastLine = min(lines.count, cursor.line + lineLimit)
        while cursor.line < lastLine {
            let line = lines[cursor.line]
            let rest = line[cursor.index...]
            // Searched and counted in bytes where the text passed over is
            // ASCII (each byte a Character): by Character, this search was
            // a sixth of a dry run. A snippet of ASCII not in the bytes is
            // not in the Characters either.
            let found = Self.byteRange(of: snippet, in: rest)
            if let found, Self.isASCII(line, from: cursor.index, to: found.upperBound) {
                cursor.column += rest.utf8.distance(from: cursor.index, to: found.lowerBound)
                cursor.index = found.lowerBound
                return cursor
            }
            if found != nil || !snippet.utf8.allSatisfy({ $0 < 0x80 }), let range = rest.range(of: snippet) {
                cursor.column += line.distance(from: cursor.index, to: range.lowerBound)
                cursor.index = range.lowerBound
                return cursor
            }
            cursor.line += 1
            guard cursor.line < lastLine else { break }
            cursor.index = lines[cursor.line].startIndex
            cursor.column = 1
        }
        return nil
    }

    /// The cursor one character after `cursor` (to search for the next occurrence).
    public func advanced(_ cursor: Cursor, by characters: Int) -> Cursor {
        var next = cursor
        let line = lines[cursor.line]
        let end = Self.asciiIndex(in: line, from: cursor.index, offsetBy: characters)
            ?? line.index(cursor.index, offsetBy: characters, limitedBy: line.endIndex) ?? line.endIndex
        next.column += line.distance(from: cursor.index, to: end)
        next.index = end
        return next
    }

    /// `offset` Characters on from `index`, when those are ASCII bytes
    /// (nil otherwise, or past the end).
    private static func asciiIndex(in line: Substring, from index: Substring.Index, offsetBy offset: Int) -> Substring.Index? {
        guard let end = line.utf8.index(index, offsetBy: offset, limitedBy: line.utf8.endIndex), isASCII(line, from: index, to: end) else { return nil }
        return end
    }

    /// Whether the bytes from `start` to `end`, and the one after, are
    /// ASCII: each is then a Character of its own (a line holds no CR or
    /// LF), and the last one is not joined by an accent after it.
    private static func isASCII(_ line: Substring, from start: Substring.Index, to end: Substring.Index) -> Bool {
        let utf8 = line.utf8
        let through = end < utf8.endIndex ? utf8.index(after: end) : end
        return utf8[start..<through].allSatisfy { $0 < 0x80 }
    }

    /// Where `snippet`'s bytes first occur in `text`.
    private static func byteRange(of snippet: String, in text: Substring) -> Range<Substring.Index>? {
        let utf8 = text.utf8
        let needle = snippet.utf8
        guard let first = needle.first else { return nil }
        var from = utf8.startIndex
        while let candidate = utf8[from...].firstIndex(of: first) {
            if utf8[candidate...].starts(with: needle) { return candidate..<utf8.index(candidate, offsetBy: needle.count) }
            from = utf8.index(after: candidate)
        }
        return nil
    }
}

extension Substring {
    /// A plain substring search (Foundation-free).
    package func range(of needle: String) -> Range<Index>? {
        guard let first = needle.first else { return nil }
        var index = startIndex
        while let candidate = self[index...].firstIndex(of: first) {
            if self[candidate...].starts(with: needle) {
                return candidate..<self.index(candidate, offsetBy: needle.count)
            }
            index = self.index(after: candidate)
        }
        return nil
    }
}
