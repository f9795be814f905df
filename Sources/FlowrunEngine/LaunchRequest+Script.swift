import FlowrunModel

/// Starting a `run:` script as its task's `ScriptLaunch` says.
extension LaunchRequest {
    /// Starts the script from `file` as `launch` says.
    mutating func run(_ launch: ScriptLaunch, from file: String) {
        scriptFile = file
        switch launch {
        case .shellCommand: break
        case .interpreter(let words):
            shell = words[0]
            shellArguments = Array(words.dropFirst())
        case .shebang:
            shell = file
            executesScriptFile = true
        }
    }

    /// Execs `program` directly, with `words` as its argv (`program` is
    /// where the first word was found in the task's PATH).
    mutating func runDirectly(_ words: [String], program: String) {
        shell = program
        command = words
    }

    /// argv: `SHELL -c SCRIPT`, `SHELL ARGUMENTS… FILE`, `FILE`, or the command's words.
    var arguments: [String] {
        if let command { return command }
        guard let scriptFile else { return [shell] + shellArguments + ["-c", script] }
        return executesScriptFile ? [scriptFile] : [shell] + shellArguments + [scriptFile]
    }
}
