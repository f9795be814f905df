import FlowrunLoading
import Foundation
import Testing

/// Every recipe in the repository's `workflows/` folder validates and plans
/// cleanly through the real binary: users copy these files.
@Suite struct WorkflowsTests {
    /// `workflows/`, found from this file so the tests work from any directory.
    static let folder: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // FlowrunEndToEndTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // the package
        .appendingPathComponent("workflows").path

    /// The workflow files, sorted (an unreadable folder gives none, which
    /// `theFolderHoldsTheRecipes` turns into a failure).
    static let files: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted().map { folder + "/" + $0 }
    }()

    /// Guards the parameterised tests below against passing vacuously.
    @Test func theFolderHoldsTheRecipes() {
        #expect(Self.files.count >= 4, "expected at least 4 workflows in \(Self.folder), found \(Self.files)")
    }

    @Test(arguments: files)
    func validates(_ file: String) throws {
        let run = try FlowrunBinary.run(["validate", file])
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(!run.stderr.contains("error:"), "\(run)")
        #expect(!run.stderr.contains("warning:"), "a recipe users copy should not warn\n\(run)")
        #expect(run.stdout.contains("\(file): valid"), "\(run)")
    }

    @Test(arguments: files)
    func dryRunPrintsAPlanNamingEveryStep(_ file: String) throws {
        let expected = try Self.stepNames(in: file)
        let run = try FlowrunBinary.run([file, "--dry-run"] + (try Self.everythingAsTargets(file)))
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stderr.isEmpty, "\(run)")
        #expect(run.stdout.contains("dry run"), "\(run)")
        // Each task, group and join heads its own entry: `  NAME  [kind…]`.
        let headings = Set(run.stdout.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let end = line.range(of: "  [") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 2)..<end.lowerBound])
        })
        for name in expected {
            #expect(headings.contains(name), "the plan has no entry for '\(name)'\n\(run)")
        }
    }

    @Test(arguments: files)
    func dryRunAsJSONParsesAndHasTheDocumentedKeys(_ file: String) throws {
        let run = try FlowrunBinary.run([file, "--dry-run", "--output", "json"] + (try Self.everythingAsTargets(file)))
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        let parsed = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8))
        let plan = try #require(parsed as? [String: Any], "the plan is not a JSON object\n\(run)")
        for key in ["schema", "workflow", "stages", "steps", "finally", "semaphores"] {
            #expect(plan[key] != nil, "no '\(key)' in the JSON plan\n\(run)")
        }
        #expect((plan["schema"] as? String)?.hasPrefix("flowrun-plan/") == true)

        let steps = try #require(plan["steps"] as? [[String: Any]])
        let finally = try #require(plan["finally"] as? [[String: Any]])
        let stages = try #require(plan["stages"] as? [[String]])
        let stepNames = steps.compactMap { $0["name"] as? String }
        let finallyNames = finally.compactMap { $0["name"] as? String }
        #expect(Set(stepNames + finallyNames) == Set(try Self.stepNames(in: file)))
        #expect(stages.flatMap { $0 }.sorted() == stepNames.sorted(), "every step in exactly one stage")
    }

    /// A recipe with `default:` plans its default goal when run bare; named
    /// as targets, every task, group and join plans everything.
    static func everythingAsTargets(_ file: String) throws -> [String] {
        let workflow = try #require(WorkflowValidator.validate(path: file).workflow)
        guard !workflow.defaultTargets.isEmpty else { return [] }
        return workflow.mainTasks.map(\.name) + workflow.groups.map(\.name) + workflow.joins.map(\.name)
    }

    /// What a plan of `file` must name, from the model: tasks, static group
    /// members, fan-outs as `GROUP[*]`, groups, joins and `finally` tasks.
    static func stepNames(in file: String) throws -> [String] {
        let result = WorkflowValidator.validate(path: file)
        let workflow = try #require(result.workflow, "\(result.diagnostics)")
        return workflow.mainTasks.map(\.name)
            + workflow.groups.compactMap { $0.fanOut == nil ? nil : "\($0.name)[*]" }
            + workflow.groups.map(\.name)
            + workflow.joins.map(\.name)
            + workflow.finally.map(\.name)
            // A computed var's task (SPEC §15), which the planner adds.
            + workflow.vars.filter { $0.command != nil }.map { "vars." + $0.name }
    }
}
