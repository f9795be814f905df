import FlowrunYAML

/// Every task, group and join name in a file, collected before decoding so
/// that operands like `tasks.my.task.stdout` can be split at a known name.
package struct NameTable {
    package enum Kind: String {
        case task, group, join
    }

    package var kinds: [String: Kind] = [:]
    /// Names of group members, static and fan-out templates excluded, by group.
    var groupOf: [String: String] = [:]
    var finallyTasks: Set<String> = []

    package init() {}

    /// Reads the names from the raw tree; decoding reports what is wrong with them.
    init(root: YAMLNode) {
        for pair in root.mapping ?? [] {
            guard let section = pair.key.scalar?.text, let entries = pair.value.mapping else { continue }
            kinds.reserveCapacity(kinds.count + entries.count)
            for entry in entries {
                guard let name = entry.key.scalar?.text else { continue }
                switch section {
                case "tasks": kinds[name] = .task
                case "finally": kinds[name] = .task; finallyTasks.insert(name)
                case "joins": kinds[name] = .join
                case "groups":
                    kinds[name] = .group
                    let members = entry.value.mapping?.first { $0.key.scalar?.text == "tasks" }?.value.mapping ?? []
                    for member in members {
                        guard let memberName = member.key.scalar?.text else { continue }
                        kinds[memberName] = .task
                        groupOf[memberName] = name
                    }
                default: break
                }
            }
        }
    }

    func names(of kind: Kind) -> [String] {
        kinds.filter { $0.value == kind }.map(\.key).sorted()
    }
}
