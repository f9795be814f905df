import FlowrunYAML
import FlowrunModel

/// `dotenv: [.env, {path: .env.local, required: false}]` (SPEC §15), the
/// entries as Docker Compose's `env_file:` writes them. The files are read
/// when a run starts (`DotenvLoader`), not when the file is validated: a
/// `.env` is usually a local, untracked file.
extension WorkflowDecoder {
    static let dotenvKeys = ["path", "required"]

    mutating func dotenvFiles(_ node: YAMLNode) -> [DotenvFile] {
        oneOrList(node, expected: "a file or a list of files for dotenv").compactMap { item in
            if item.mapping != nil {
                guard let fields = fields(of: item, what: "a dotenv entry", allowed: Self.dotenvKeys) else { return nil }
                guard let pathNode = fields["path"]?.value else {
                    error("a dotenv entry written as a mapping needs 'path:' (the file)", at: item)
                    return nil
                }
                guard let path = dotenvPath(pathNode) else { return nil }
                let required = fields["required"].flatMap { bool($0.value, what: "required") } ?? true
                return DotenvFile(path: path, required: required)
            }
            return dotenvPath(item).map { DotenvFile(path: $0, required: true) }
        }
    }

    private mutating func dotenvPath(_ node: YAMLNode) -> Located<String>? {
        guard let scalar = node.scalar, !scalar.isNull, !scalar.text.isEmpty else {
            error("expected a file name for dotenv, found \(describe(node))", at: node)
            return nil
        }
        guard !holdsExpression(node, what: "dotenv") else { return nil }
        return Located(scalar.text, at: location(node))
    }
}
