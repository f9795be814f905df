/// A `run:` script that is one simple command, which flowrun execs itself
/// instead of through `/bin/sh -c`, as make does with a recipe line that has
/// no shell syntax: `sh` would only split it at blanks, look its first word
/// up in PATH and exec it, and its start-up (~0.3 ms here) is most of a
/// short task's cost.
///
/// What counts (docs/RUNNING.md): words of letters, digits and
/// `- _ . / , : + @ %` (and `=` after the first word) separated by spaces or
/// tabs, a trailing newline allowed, the first word not one of the shell's
/// builtins or keywords. Anything else, including quotes, `$`, `\`, globs,
/// redirections, `;&|`, `~`, `#` and a newline inside, goes to the shell.
/// Where the direct exec fails (a command not found, not executable, a
/// script without `#!`) flowrun runs the script through the shell after
/// all, so the exit code and message are the shell's (127, 126).
enum DirectCommand {
    /// The script's argv, or nil if it needs the shell.
    static func words(of script: String) -> [String]? {
        var words: [String] = []
        var word: [UInt8] = []
        var body = script.utf8[...]
        while body.last == UInt8(ascii: "\n") { body = body.dropLast() }
        for byte in body {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                if !word.isEmpty { words.append(String(decoding: word, as: UTF8.self)) }
                word.removeAll(keepingCapacity: true)
                continue
            }
            guard isPlain(byte) || (byte == UInt8(ascii: "=") && !words.isEmpty) else { return nil }
            word.append(byte)
        }
        if !word.isEmpty { words.append(String(decoding: word, as: UTF8.self)) }
        guard let first = words.first, !shellWords.contains(first) else { return nil }
        return words
    }

    /// Letters, digits and `- _ . / , : + @ %`: bytes no POSIX shell treats specially.
    private static func isPlain(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: ","),
             UInt8(ascii: ":"), UInt8(ascii: "+"), UInt8(ascii: "@"), UInt8(ascii: "%"):
            return true
        default:
            return false
        }
    }

    /// First words the shell runs itself, or treats as syntax (make's list,
    /// with the keywords and the builtins of dash and bash that have a
    /// program of the same name behaving differently: `echo`, `printf`,
    /// `pwd`, `kill`, `test`). `true` and `false` are not here: the programs
    /// do what the builtins do.
    static let shellWords: Set<String> = [
        ".", ":", "alias", "bg", "bind", "break", "builtin", "caller", "case", "cd", "command", "compgen",
        "complete", "continue", "declare", "dirs", "disown", "do", "done", "echo", "elif", "else", "enable",
        "esac", "eval", "exec", "exit", "export", "fc", "fg", "fi", "for", "function", "getopts", "hash",
        "help", "history", "if", "in", "jobs", "kill", "let", "local", "login", "logout", "mapfile", "popd",
        "printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "select", "set", "shift",
        "shopt", "source", "suspend", "test", "then", "time", "times", "trap", "type", "typeset", "ulimit",
        "umask", "unalias", "unset", "until", "wait", "while",
    ]
}
