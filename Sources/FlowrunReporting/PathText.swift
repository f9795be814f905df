import FlowrunValues

/// Paths on a narrow terminal: the end of a path (the file's name) says the
/// most, so a path too long for its room loses its middle, not its end:
/// `.flowrun/runs/…/logs/check.log`.
enum PathText {
    static func shortened(_ path: String, to columns: Int) -> String {
        guard TerminalText.width(path) > columns, columns >= 12 else { return path }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // Keep as many trailing components as fit after the first one and `…`.
        var tail: [String] = []
        var used = 0
        // An absolute path keeps its first folder (`/tmp/…/check.log`).
        let absolute = path.hasPrefix("/") && parts.count > 3
        let head = absolute ? "/" + parts[1] : parts.first ?? ""
        for part in parts.dropFirst(absolute ? 2 : 1).reversed() {
            let cost = TerminalText.width(part) + 1
            if TerminalText.width(head) + 2 + used + cost > columns { break }
            tail.insert(part, at: 0)
            used += cost
        }
        if tail.isEmpty {
            // Not even the file's name fits with the head: keep the name's end.
            let name = parts.last ?? path
            return "…" + String(name.suffix(max(1, columns - 1)))
        }
        return head + "/…/" + tail.joined(separator: "/")
    }
}
