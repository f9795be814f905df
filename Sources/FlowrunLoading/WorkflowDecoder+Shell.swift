import FlowrunYAML
import FlowrunModel

extension WorkflowDecoder {
    /// `shell: python3`, `shell: bash -eu` or `shell: [bash, -eu, -o, pipefail]`:
    /// the program and its arguments; the script file is the last argument.
    mutating func shellCommand(_ node: YAMLNode, script action: TaskAction) -> [String]? {
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
}
