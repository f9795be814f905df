// FoundationEssentials, not Foundation: see Plan+JSON.swift.
import FoundationEssentials
import FlowrunValues
package import FlowrunModel

/// What a workflow can run: `flowrun list [FILE]`. Every task, fan-out,
/// group, join and `finally` task in plan order, with its description.
extension Plan {
    /// One row of the listing; the JSON form is documented in docs/FORMAT.md.
    package struct ListEntry: Sendable, Encodable, Equatable {
        package var name: String
        /// task, service, fan-out, group, join or finally.
        package var kind: String
        package var description: String?
        /// The group a task or fan-out belongs to.
        package var group: String?
        /// A group's members (a fan-out as its template, `G[*]`), a join's `wait:`.
        package var members: [String]
        /// Named by the file's `default:` (what a bare run runs).
        package var isDefault = false
        /// For a fan-out: its members that `default:` names.
        package var defaultMembers: [String] = []
        /// `aliases:`: more names it runs by.
        package var aliases: [String] = []
        /// `resources:` as declared (SPEC §13): `2 CPUs, 6 GiB memory`.
        package var resources: ResourceRequest?

        enum CodingKeys: String, CodingKey {
            case name, kind, description, group, isDefault = "default", defaultMembers = "default_members", aliases, resources
        }

        struct Resources: Encodable { var cpus: Double?, memory_bytes: UInt64? }

        // `description` is always there (null when none); `group` only for a member.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(kind, forKey: .kind)
            try container.encode(description, forKey: .description)
            try container.encodeIfPresent(group, forKey: .group)
            if isDefault { try container.encode(true, forKey: .isDefault) }
            if !defaultMembers.isEmpty { try container.encode(defaultMembers, forKey: .defaultMembers) }
            if !aliases.isEmpty { try container.encode(aliases, forKey: .aliases) }
            if let resources { try container.encode(Resources(cpus: resources.cpus, memory_bytes: resources.memoryBytes), forKey: .resources) }
        }
    }

    package var listEntries: [ListEntry] {
        let defaults = Set(workflow.defaultTargets.map(\.value))
        let defaultMembers = defaultMembersByFanOut
        let groupDescriptions = Dictionary(
            workflow.groups.map { ($0.name, $0.description) }, uniquingKeysWith: { first, _ in first })
        let aliases = Dictionary(TargetTable.aliases(of: workflow).map { ($0.name, $0.aliases.map(\.value)) }, uniquingKeysWith: { first, _ in first })
        let main = steps.map { step -> ListEntry in
            let description: String?
            switch step.kind {
            case .task, .fanOut: description = step.task?.description
            case .group: description = groupDescriptions[step.name] ?? nil
            case .join: description = step.join?.description
            }
            let members = step.kind == .group || step.kind == .join ? step.members : []
            // A service is listed as one: running it means starting something that keeps running.
            let kind = step.kind == .task && step.task?.isService == true ? "service" : step.kind.rawValue
            var entry = ListEntry(name: step.name, kind: kind, description: description, group: step.group, members: members)
            entry.isDefault = step.kind != .fanOut && defaults.contains(step.name)
            if step.kind == .fanOut { entry.defaultMembers = defaultMembers[step.name] ?? [] }
            entry.aliases = step.kind == .fanOut ? [] : aliases[step.name] ?? []
            entry.resources = step.task?.resources
            return entry
        }
        let last = finallySteps.map {
            var entry = ListEntry(name: $0.name, kind: "finally", description: $0.task?.description, group: $0.group, members: [])
            entry.resources = $0.task?.resources
            return entry
        }
        return main + last
    }

    /// Aligned columns for a terminal: name, kind, description, then where
    /// the step sits (its group, a group's members, what a join waits for).
    /// Every field is masked and escaped: they come from the file.
    package var listText: String {
        let rows = listEntries.map { entry -> [String] in
            var detail = ""
            if let group = entry.group { detail = "in " + group }
            if entry.kind == "group" { detail = "members: " + entry.members.joined(separator: ", ") }
            if entry.kind == "join" { detail = "waits for: " + entry.members.joined(separator: ", ") }
            if !entry.aliases.isEmpty { detail = detail.isEmpty ? "aliases: " + entry.aliases.joined(separator: ", ") : "aliases: " + entry.aliases.joined(separator: ", ") + " · " + detail }
            // What a bare `flowrun` runs (`default:`), first.
            if entry.isDefault { detail = detail.isEmpty ? "default" : "default · " + detail }
            if let resources = entry.resources { detail = detail.isEmpty ? resources.text : detail + " · " + resources.text }
            if !entry.defaultMembers.isEmpty { detail = "default: " + entry.defaultMembers.joined(separator: ", ") + " · " + detail }
            // Masked first (a secret sits whole in its field), then escaped.
            return [TerminalText.escapedName(shown(entry.name))]
                + [entry.kind, entry.description ?? "", detail].map { TerminalText.escaped(shown($0)) }
        }
        guard !rows.isEmpty else { return "" }
        var widths = [Int](repeating: 0, count: 3)
        for row in rows {
            for column in 0..<3 { widths[column] = max(widths[column], TerminalText.width(row[column])) }
        }
        return rows.map { row in
            var line = ""
            for column in 0..<4 {
                guard column < 3 else { line += row[column]; break }
                // An empty description column takes no room when no row has one.
                guard widths[column] > 0 else { continue }
                line += row[column] + String(repeating: " ", count: widths[column] - TerminalText.width(row[column]) + 2)
            }
            return String(line.reversed().drop { $0 == " " }.reversed())
        }.joined(separator: "\n") + "\n"
    }

    /// `flowrun list --output json`: an array of {name, kind, description, group?}.
    package var listJSON: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(listEntries)) ?? Data("[]".utf8)
        return shownJSON(JSONText.escapingControls(String(decoding: data, as: UTF8.self))) + "\n"
    }

    /// `default:` names that are fan-out members, by fan-out template name (`G[*]`).
    private var defaultMembersByFanOut: [String: [String]] {
        guard !workflow.defaultTargets.isEmpty else { return [:] }
        let graph = DependencyGraph(mainPhaseOf: workflow)
        let table = TargetTable(workflow, graph: graph)
        var result: [String: [String]] = [:]
        for target in workflow.defaultTargets {
            if case .member(let fanOut, _, _)? = table.target(named: target.value) {
                result[graph.nodes[fanOut].name, default: []].append(target.value)
            }
        }
        return result
    }
}
