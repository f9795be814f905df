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

    /// argv: `SHELL -c SCRIPT`, `SHELL ARGUMENTS… FILE`, or `FILE`.
    var arguments: [String] {
        guard let scriptFile else { return [shell] + shellArguments + ["-c", script] }
        return executesScriptFile ? [scriptFile] : [shell] + shellArguments + [scriptFile]
    }
}
