import FlowrunYAML
import FlowrunModel

/// `includes: { docs: docs/flowrun.yaml }` (SPEC §15): read here as
/// namespace → path; `WorkflowIncludes` loads and merges the files.
extension WorkflowDecoder {
    /// Top-level keys an included file may not set: they belong to the run,
    /// which the including file describes.
    static let keysOfTheRunOnly = ["max_parallel", "timeout", "fail_fast", "kill_grace", "shell", "secrets", "semaphores", "dotenv", "capacity", "executor", "slurm"]

    mutating func includeEntries(_ node: YAMLNode) -> [IncludeEntry] {
        named(node, what: "includes").compactMap { entry in
            guard let scalar = entry.value.scalar, !scalar.isNull, !scalar.text.isEmpty else {
                error("include '\(entry.key.value)' needs the path of a workflow file, found \(describe(entry.value))", at: entry.value)
                return nil
            }
            guard !holdsExpression(entry.value, what: "an include's path") else { return nil }
            return IncludeEntry(namespace: entry.key, path: Located(scalar.text, at: location(entry.value)))
        }
    }

    /// Reports the run's own keys in an included file.
    mutating func refuseKeysOfTheRun(in fields: Fields) {
        for key in Self.keysOfTheRunOnly {
            guard let pair = fields[key] else { continue }
            error("'\(key)' is not read from an included file: it is a setting of the whole run; set it in the including file", at: pair.key)
        }
    }
}

/// One entry of `includes:`.
struct IncludeEntry {
    var namespace: Located<String>
    var path: Located<String>
}
