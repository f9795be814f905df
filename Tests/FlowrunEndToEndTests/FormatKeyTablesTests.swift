import FlowrunLoading
import Foundation
import Testing

/// docs/FORMAT.md's key tables and its quick reference (§16) list exactly
/// the keys the validator accepts (`WorkflowKeys`), so that neither can
/// gain a key the other lacks. Before, the quick reference had no
/// `sources`, `generates`, `matrix` or `split`, the top-level table no
/// `templates` and the task table no `sources` or `generates`.
@Suite struct FormatKeyTablesTests {
    static func format() throws -> String { try DocsPathsTests.read("docs/FORMAT.md") }

    static func keys(_ context: String) -> Set<String> { Set(WorkflowKeys.byContext[context] ?? []) }

    /// The keys in the first column of the first table after `heading`
    /// (each `` `key` `` of a cell such as `` `uses`, `with` ``).
    static func tableKeys(after heading: String, in text: String) throws -> Set<String> {
        let lines = text.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex(of: heading), "FORMAT.md has no heading '\(heading)'")
        var keys: Set<String> = []
        var inTable = false
        for line in lines[(start + 1)...] {
            if line.hasPrefix("|") {
                inTable = true
                let cell = line.split(separator: "|", omittingEmptySubsequences: true).first.map(String.init) ?? ""
                keys.formUnion(cell.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element))
            } else if inTable {
                break
            } else if line.hasPrefix("#") {
                Issue.record("no table after '\(heading)'")
                break
            }
        }
        return keys.subtracting(["Key"])
    }

    /// The quick reference's keys: the top level's, and those one level
    /// under `SECTION:\n  NAME:` for tasks, templates, groups and joins.
    static func quickReference(in text: String) throws -> (top: Set<String>, sections: [String: Set<String>]) {
        let lines = text.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex(of: "## 16. Quick reference"))
        let open = try #require(lines[start...].firstIndex(of: "```text"))
        let close = try #require(lines[(open + 1)...].firstIndex(of: "```"))
        var top: Set<String> = []
        var sections: [String: Set<String>] = [:]
        var section = ""
        for line in lines[(open + 1)..<close] {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = line[..<colon]
            if !key.hasPrefix(" ") {
                section = String(key)
                top.insert(section)
            } else if key.hasPrefix("    "), !key.hasPrefix("     ") {
                let word = key.trimmingCharacters(in: .whitespaces)
                if word.allSatisfy({ $0.isLowercase || $0 == "_" }) { sections[section, default: []].insert(word) }
            }
        }
        return (top, sections)
    }

    @Test func theTopLevelTableListsEveryTopLevelKey() throws {
        let table = try Self.tableKeys(after: "## 4. Top-level keys", in: Self.format())
        #expect(table == Self.keys("workflow"), "only in FORMAT.md: \(table.subtracting(Self.keys("workflow")).sorted()); missing from FORMAT.md: \(Self.keys("workflow").subtracting(table).sorted())")
    }

    @Test func theTaskTablesListEveryTaskKey() throws {
        let text = try Self.format()
        let table = try Self.tableKeys(after: "### Actions — exactly one per task", in: text)
            .union(try Self.tableKeys(after: "### Task keys", in: text))
        let accepted = Self.keys("task").union(Self.keys("fanOutTask"))
        #expect(table == accepted, "only in FORMAT.md: \(table.subtracting(accepted).sorted()); missing from FORMAT.md: \(accepted.subtracting(table).sorted())")
    }

    @Test func theGroupAndJoinTablesListTheirKeys() throws {
        let text = try Self.format()
        let groups = try Self.tableKeys(after: "## 10. Groups", in: text)
        #expect(groups == Self.keys("group"), "missing from FORMAT.md: \(Self.keys("group").subtracting(groups).sorted()); only there: \(groups.subtracting(Self.keys("group")).sorted())")
        let joins = try Self.tableKeys(after: "## 11. Joins", in: text)
        #expect(joins == Self.keys("join"), "missing from FORMAT.md: \(Self.keys("join").subtracting(joins).sorted()); only there: \(joins.subtracting(Self.keys("join")).sorted())")
    }

    @Test func theQuickReferenceListsEveryKey() throws {
        let reference = try Self.quickReference(in: Self.format())
        #expect(reference.top == Self.keys("workflow"), "missing: \(Self.keys("workflow").subtracting(reference.top).sorted()); extra: \(reference.top.subtracting(Self.keys("workflow")).sorted())")
        let expected: [String: Set<String>] = [
            "tasks": Self.keys("task"),
            "groups": Self.keys("group"),
            "joins": Self.keys("join"),
            // A template's task keys are written `TASK-KEYS`: only its own key is listed.
            "templates": Self.keys("template").subtracting(Self.keys("task")),
        ]
        for (section, keys) in expected {
            let listed = reference.sections[section] ?? []
            #expect(listed == keys, "\(section): missing \(keys.subtracting(listed).sorted()); extra \(listed.subtracting(keys).sorted())")
        }
    }
}
