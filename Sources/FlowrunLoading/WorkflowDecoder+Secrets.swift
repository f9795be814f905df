import FlowrunYAML
import FlowrunModel

extension WorkflowDecoder {
    /// `secrets: [TOKEN, password]`: each name is a variable under `vars:`,
    /// an entry of the workflow's `env:`, or an environment variable flowrun
    /// may inherit from its caller (any valid name: the caller's environment
    /// is not known when a file is validated, so nothing is said about one
    /// that is unset).
    mutating func secrets(_ node: YAMLNode, vars: [Variable], env: [EnvironmentEntry]) -> [Located<String>] {
        let known = vars.map(\.name) + env.map(\.name)
        var seen = Set<String>()
        return references(node, what: "secrets").compactMap { name in
            guard seen.insert(name.value).inserted else {
                error("secret '\(name.value)' is listed twice", at: name.location)
                return nil
            }
            guard known.contains(name.value) || Self.isEnvironmentName(name.value) else {
                let hint = Suggestion.hint(for: name.value, in: known)
                error("secret '\(name.value)' is neither a variable under vars nor an environment variable name\(hint)", at: name.location)
                return nil
            }
            return name
        }
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`: what a shell accepts as a variable name.
    static func isEnvironmentName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}
