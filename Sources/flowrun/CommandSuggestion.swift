#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues

/// `flowrun grpah x.yaml`: a first word that is no file and is close to a
/// subcommand's name is a misspelt subcommand, not a workflow that cannot
/// be opened.
enum CommandSuggestion {
    static let subcommands = ["run", "validate", "graph", "list", "export", "runs", "show", "logs", "help"]

    /// The message for a misspelt subcommand in `arguments` (the program's
    /// name first), or nil when the first word is a subcommand, an option,
    /// an existing file, or nothing like a subcommand.
    static func message(for arguments: [String]) -> String? {
        guard arguments.count > 1 else { return nil }
        let word = arguments[1]
        guard !word.hasPrefix("-"), !subcommands.contains(word), !word.contains("/"), access(word, F_OK) != 0,
              let nearest = nearest(to: word) else { return nil }
        return "flowrun: unknown command `\(TerminalText.escaped(word))`; did you mean `\(nearest)`?"
    }

    /// The subcommand at most two edits away (one for short words), if one is.
    static func nearest(to word: String) -> String? {
        let lowered = word.lowercased()
        let scored = subcommands.map { ($0, distance(lowered, $0)) }.filter { $0.1 <= ($0.0.count <= 4 ? 1 : 2) }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// Levenshtein distance, counting a swap of neighbours as one edit.
    static func distance(_ left: String, _ right: String) -> Int {
        let a = Array(left), b = Array(right)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
