/// How a `run:` script starts.
package enum ScriptLaunch: Sendable, Equatable {
    /// `SHELL -c SCRIPT`, the workflow's shell (as a file past one argument's limit).
    case shellCommand
    /// `PROGRAM ARGUMENTS… FILE`: a task's `shell:`. As a file, because
    /// interpreters agree on that and not on `-c` (node and ruby say `-e`).
    case interpreter([String])
    /// The file itself, started by the kernel through its `#!` line (just's
    /// shebang recipes); the file is written 0700.
    case shebang(String)

    /// A task's launch: its `shell:`, else a script that starts with `#!`, else the workflow's shell.
    package static func of(shell: [String]?, script: String) -> ScriptLaunch {
        if let shell, !shell.isEmpty { return .interpreter(shell) }
        if script.hasPrefix("#!") { return .shebang(String(script.prefix { !$0.isNewline })) }
        return .shellCommand
    }

    /// Whether a shell reads the script, so that `${{ }}` values are quoted
    /// for their shell context (`ShellContextScanner`); another interpreter
    /// gets each value as one single-quoted word, as written.
    package var readsAsShell: Bool {
        switch self {
        case .shellCommand: return true
        case .interpreter(let words): return Self.isShell(words)
        case .shebang(let line): return Self.isShell(line.dropFirst(2).split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init))
        }
    }

    static let shells: Set<Substring> = ["sh", "bash", "dash", "ash", "ksh", "mksh", "zsh", "busybox"]

    /// `bash -e`, `/bin/sh`, `/usr/bin/env bash`, `env -S bash -e`.
    static func isShell(_ words: [String]) -> Bool {
        guard let first = words.first, let name = first.split(separator: "/").last else { return false }
        if name == "env" {
            return words.dropFirst().first { !$0.hasPrefix("-") && !$0.contains("=") }.map { isShell([$0]) } ?? false
        }
        return shells.contains(name)
    }

    /// Whether the script runs from a file in the run record.
    package var usesFile: Bool { self != .shellCommand }

    /// Whether the file runs as a program (written 0700).
    package var runsItself: Bool {
        if case .shebang = self { return true }
        return false
    }

    /// The program named in messages: `python3`, `#!/usr/bin/env python3`, or the shell.
    package func program(shell: String) -> String {
        switch self {
        case .shellCommand: return shell
        case .interpreter(let words): return words[0]
        case .shebang(let line): return line
        }
    }

    /// The launch as it reads in a plan: `python3 FILE`, `#!/usr/bin/env python3 (the script as a file)`.
    package func text(shell: String) -> String {
        switch self {
        case .shellCommand: return "\(shell) -c SCRIPT"
        case .interpreter(let words): return words.joined(separator: " ") + " SCRIPT-FILE"
        case .shebang(let line): return "\(line) (the script runs as its own file)"
        }
    }
}
