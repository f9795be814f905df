import FlowrunValues

/// ArgumentParser's messages echo what was typed ("The value 'd…' is
/// invalid for '--format <format>'") with its line breaks raw, and escaping
/// the message's lines cannot tell those from its own. So every argument
/// holding a control character — and each side of its first `=`, which
/// ArgumentParser quotes alone (`--format=…`, `--var name=…`) — is put back
/// escaped wherever the message carries it.
enum ArgumentEcho {
    static func escaped(_ message: String, arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> String {
        var message = message
        let typed = arguments.filter { TerminalText.escaped($0) != $0 }
        var pieces = Set<String>()
        for argument in typed {
            pieces.insert(argument)
            if let equals = argument.firstIndex(of: "=") {
                pieces.insert(String(argument[..<equals]))
                pieces.insert(String(argument[argument.index(after: equals)...]))
            }
        }
        // Longest first: a whole argument before the part of it after `=`.
        for piece in pieces.sorted(by: { $0.count > $1.count }) where TerminalText.escaped(piece) != piece {
            message = message.replacing(piece, with: TerminalText.escaped(piece))
        }
        return message
    }
}
