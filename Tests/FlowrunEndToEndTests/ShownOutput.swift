import Foundation

/// Compares what a document shows a command printing with what it printed.
///
/// Both sides are normalised the same way first: a run id
/// (`20261125-133648.321470-e5ff3a90c4d1`, or one from before microseconds,
/// `20261125-133648-e5ff3a90c4d1b827`) reads `RUN_ID`, a clock time
/// (`13:36:48.321`) `HH:MM:SS.mmm`, a measured duration with a decimal point
/// (`0.03s`, `2.0s`) `N.NNs`, and trailing spaces go. Then `…` in the shown
/// text stands for anything: within a line, any characters; a line that is
/// only `…`, any number of lines (none included).
enum ShownOutput {
    static func normalised(_ line: String) -> String {
        var text = line
        for (pattern, replacement) in replacements {
            text = pattern.stringByReplacingMatches(
                in: text, range: NSRange(text.startIndex..., in: text), withTemplate: replacement)
        }
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }

    private static let replacements: [(NSRegularExpression, String)] = [
        (#"\b\d{8}-\d{6}(?:\.\d{6}-[0-9a-f]{12}|-[0-9a-f]{16})\b"#, "RUN_ID"),
        (#"\b\d{2}:\d{2}:\d{2}\.\d{3}\b"#, "HH:MM:SS.mmm"),
        (#"\b\d+\.\d+s\b"#, "N.NNs"),
    ].map { (try! NSRegularExpression(pattern: $0.0), $0.1) }

    /// Whether `actual` (the whole output) matches `shown` (the lines under the command).
    static func matches(shown: [String], actual: String) -> Bool {
        var actualLines = actual.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if actualLines.last == "" { actualLines.removeLast() }
        var shownLines = shown
        while shownLines.last?.trimmingCharacters(in: .whitespaces).isEmpty == true { shownLines.removeLast() }
        return matchLines(shownLines.map(normalised)[...], actualLines.map(normalised)[...])
    }

    private static func matchLines(_ shown: ArraySlice<String>, _ actual: ArraySlice<String>) -> Bool {
        guard let first = shown.first else { return actual.isEmpty }
        if first == "…" {
            // Any number of lines: try the shortest stretch first.
            var rest = actual
            while true {
                if matchLines(shown.dropFirst(), rest) { return true }
                guard !rest.isEmpty else { return false }
                rest = rest.dropFirst()
            }
        }
        guard let line = actual.first, matchLine(first, line) else { return false }
        return matchLines(shown.dropFirst(), actual.dropFirst())
    }

    /// `…` within a line stands for any characters.
    static func matchLine(_ shown: String, _ actual: String) -> Bool {
        let pieces = shown.components(separatedBy: "…")
        guard pieces.count > 1 else { return shown == actual }
        guard actual.hasPrefix(pieces[0]) else { return false }
        var rest = actual.dropFirst(pieces[0].count)
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard let found = rest.range(of: piece) else { return false }
            rest = rest[found.upperBound...]
        }
        let last = pieces[pieces.count - 1]
        return rest.count >= last.count && rest.hasSuffix(last)
    }
}
