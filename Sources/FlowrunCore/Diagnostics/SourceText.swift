/// A file's text as lines, to show the line of a diagnostic and to find the
/// exact position of a part of a scalar (an expression inside a `run:` block).
public struct SourceText: Sendable {
    public var file: String
    public var lines: [Substring]

    public init(file: String, bytes: [UInt8]) {
        self.file = file
        let text = String(decoding: bytes, as: UTF8.self)
        lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.last == "\r" ? $0.dropLast() : $0
        }
    }

    /// Where `snippet` occurs for the `occurrence`-th time (0-based) at or after
    /// `mark`, searching at most `lineLimit` lines; nil when it is not found
    /// verbatim (e.g. a quoted scalar with escapes).
    public func locate(_ snippet: String, occurrence: Int, after mark: SourceLocation, lineLimit: Int = 10_000) -> SourceLocation? {
        guard !snippet.isEmpty, mark.line >= 1 else { return nil }
        var remaining = occurrence
        var lineIndex = mark.line - 1
        var startColumn = mark.column - 1
        while lineIndex < lines.count, lineIndex < mark.line - 1 + lineLimit {
            let line = lines[lineIndex]
            var searchStart = line.index(line.startIndex, offsetBy: min(startColumn, line.count))
            while let range = line[searchStart...].range(of: snippet) {
                if remaining == 0 {
                    return SourceLocation(file: file, line: lineIndex + 1, column: line.distance(from: line.startIndex, to: range.lowerBound) + 1)
                }
                remaining -= 1
                searchStart = range.upperBound
            }
            lineIndex += 1
            startColumn = 0
        }
        return nil
    }
}

extension Substring {
    /// A plain substring search (Foundation-free).
    func range(of needle: String) -> Range<Index>? {
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
