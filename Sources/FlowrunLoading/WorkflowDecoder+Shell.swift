import FlowrunYAML
import FlowrunModel

extension WorkflowDecoder {
    /// `shell: python3`, `shell: bash -eu` or `shell: [bash, -eu, -o, pipefail]`:
    /// the program and its arguments; the script file is the last argument.
    mutating func shellCommand(_ node: YAMLNode, script action: TaskAction) -> [String]? {
        guard let words = shellWords(node) else { return nil }
        switch action {
        case .run(let script) where script.source.hasPrefix("#!"):
            error("this task has both shell: and a #! line choosing how its script runs: keep one", at: node)
            return nil
        case .run:
            return words
        case .sleep, .http:
            error("shell applies only to run: tasks", at: node)
            return nil
        }
    }

    /// The top-level `shell:`, read like a task's (a string split at spaces,
    /// or a list); scripts run as `PROGRAM ARGUMENTS… -c SCRIPT`. A program
    /// that cannot start is reported here, not by every task that runs.
    mutating func workflowShell(_ node: YAMLNode) -> [String]? {
        guard let words = shellWords(node) else { return nil }
        if let problem = ShellProgram.problem(words[0]) {
            error("shell '\(words[0])' \(problem)", at: node)
            return nil
        }
        // just's `["bash", "-uc"]`: flowrun adds `-c SCRIPT` itself, and a
        // script long enough to go through a file would be read as the
        // command. Short options only (`-NonInteractive` is one word).
        if let option = words.dropFirst().first(where: { word in
            let letters = word.dropFirst()
            return word.hasPrefix("-") && (1...6).contains(letters.count) && letters.contains("c")
                && letters.allSatisfy { $0.isASCII && $0.isLowercase }
        }) {
            let without = String(option.filter { $0 != "c" })
            let fixed = (words.map { $0 == option ? without : $0 }.filter { $0 != "-" }).joined(separator: " ")
            error("shell '\(words.joined(separator: " "))' has -c in '\(option)': flowrun adds -c SCRIPT itself; write shell: \(fixed)", at: node)
            return nil
        }
        return words
    }

    /// The words of a `shell:` value, or nil after an error.
    private mutating func shellWords(_ node: YAMLNode) -> [String]? {
        var words: [String] = []
        switch node.content {
        case .scalar(let scalar):
            words = scalar.isNull ? [] : scalar.text.split(whereSeparator: \.isWhitespace).map(String.init)
        case .sequence(let items):
            for item in items {
                guard let scalar = item.scalar, !scalar.isNull, !scalar.text.isEmpty else {
                    error("expected a word in shell, found \(describe(item))", at: item)
                    return nil
                }
                words.append(scalar.text)
            }
        case .mapping:
            error("expected a program for shell (like python3, bash -eu or [bash, -eu, -o, pipefail]), found a mapping", at: node)
            return nil
        }
        guard !words.isEmpty else {
            error("shell needs a program, like python3 or bash -eu, found nothing", at: node)
            return nil
        }
        // Read as written: a `${{ }}` here would be run as part of a program's name.
        if words.contains(where: { $0.contains("${{") }) {
            error("shell is read as written and does not evaluate ${{ }}: name the program (like bash -eu); to choose it per run, use a script that starts with #! or pass the choice through env:", at: node)
            return nil
        }
        return words
    }
}
