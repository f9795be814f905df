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

    /// Execs `words` directly, the first looked up in `searchPath` (the task's PATH).
    mutating func runDirectly(_ words: [String], searchPath: String) {
        shell = words[0]
        command = words
        self.searchPath = searchPath
    }

    /// argv: `SHELL -c SCRIPT`, `SHELL ARGUMENTS… FILE`, `FILE`, or the command's words.
    var arguments: [String] {
        if let command { return command }
        guard let scriptFile else { return [shell] + shellArguments + ["-c", script] }
        return executesScriptFile ? [scriptFile] : [shell] + shellArguments + [scriptFile]
    }
}
