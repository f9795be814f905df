/// Prints diagnostics for people: on a terminal with the source line and a
/// caret under the column (and colour unless `NO_COLOR`), else one line each.
public struct DiagnosticRenderer: Sendable {
    public var showsSourceLines: Bool
    public var usesColor: Bool

    public init(showsSourceLines: Bool, usesColor: Bool) {
        self.showsSourceLines = showsSourceLines
        self.usesColor = usesColor
    }

    /// Renders one diagnostic; `lines` is the file's text split into lines (may be empty).
    public func render(_ diagnostic: Diagnostic, lines: [Substring]) -> String {
        let label = diagnostic.severity.rawValue + ":"
        let coloredLabel = usesColor ? (diagnostic.severity == .error ? "\u{1B}[1;31m" : "\u{1B}[1;35m") + label + "\u{1B}[0m" : label
        let location = usesColor ? "\u{1B}[1m\(diagnostic.location):\u{1B}[0m" : "\(diagnostic.location):"
        var text = "\(location) \(coloredLabel) \(diagnostic.message)"
        let index = diagnostic.location.line - 1
        guard showsSourceLines, lines.indices.contains(index) else { return text }
        // Tabs are shown as one space so the caret stays under the column.
        let line = String(lines[index].map { $0 == "\t" ? " " : $0 })
        guard line.count <= 400 else { return text }
        let caretPadding = String(repeating: " ", count: max(0, min(diagnostic.location.column - 1, line.count)))
        let caret = usesColor ? "\u{1B}[1;32m^\u{1B}[0m" : "^"
        text += "\n" + line + "\n" + caretPadding + caret
        return text
    }
}
