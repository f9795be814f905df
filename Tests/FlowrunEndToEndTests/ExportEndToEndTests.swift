import FlowrunYAML
import Foundation
import Testing

/// `flowrun export --to argo` through the real binary: every recipe in
/// `workflows/` exports, validates against Argo's JSON schema (python3's
/// `jsonschema`; the YAML is read by our own loader, so nothing else is
/// needed), and passes the checks the schema cannot make. The schema is
/// vendored in `Tests/Fixtures/argo-schema/` (Apache-2.0, origin in its ORIGIN.md).
@Suite struct ExportEndToEndTests {
    static let schema: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fixtures/argo-schema/workflow-schema.json").standardized.path

    /// Recipes that show what Argo cannot do (host facts, JSON functions);
    /// ExpressionFunctionsEndToEndTests checks they are refused at the line.
    static let notForArgo: Set<String> = ["github-style-ci.yaml"]

    @Test(arguments: WorkflowsTests.files.filter { !notForArgo.contains(URL(fileURLWithPath: $0).lastPathComponent) })
    func everyRecipeExportsToASchemaValidManifest(_ file: String) throws {
        let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(!run.stderr.contains("error:"), "\(run)")
        let documents = try ArgoManifest.documents(run.stdout)
        let workflows = documents.filter { ["Workflow", "WorkflowTemplate"].contains($0["kind"] as? String) }
        #expect(workflows.count == 1, "\(run.stdout)")
        for problem in ArgoManifest.semanticProblems(documents) {
            Issue.record("\(file): \(problem)")
        }
        try SchemaValidator.validate(workflows, label: file)
    }

    @Test func templateNamespaceStrictAndOutputFile() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path + "/out.yaml"
        let file = WorkflowsTests.folder + "/nightly-sync.yaml"
        let run = try FlowrunBinary.run(["export", file, "--to", "argo", "--template", "--namespace", "ci", "-o", output])
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
        #expect(run.diagnostics.allSatisfy { $0.contains(": warning: emulated on Argo: ") } && !run.diagnostics.isEmpty, "\(run)")
        let text = try String(contentsOfFile: output, encoding: .utf8)
        let documents = try ArgoManifest.documents(text)
        #expect(documents.map { $0["kind"] as? String } == ["WorkflowTemplate", "ConfigMap"])
        #expect(documents.allSatisfy { ($0["metadata"] as? [String: Any])?["namespace"] as? String == "ci" })
        try SchemaValidator.validate(Array(documents.prefix(1)), label: "--template")

        let strict = try FlowrunBinary.run(["export", file, "--to", "argo", "--strict"])
        #expect(strict.exitStatus == 2, "\(strict)")
        #expect(strict.stdout.isEmpty, "\(strict)")
        #expect(strict.diagnostics.contains { $0.hasPrefix(file + ":62:19: error: --strict: Argo semaphores have no weights") }, "\(strict)")
    }

    @Test func aRefusalIsADiagnosticAtTheLineAndExitsTwo() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("""
            tasks:
              a: { run: "true" }
              b: { needs: [a], run: "echo ${{ tasks.a.duration }}" }
            """, to: "refused.yaml")
        let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stdout.isEmpty)
        #expect(run.diagnostics == ["\(file):3:35: error: cannot export to Argo: 'tasks.a.duration': Argo does not give a task's duration to other tasks"])
        let unknown = try FlowrunBinary.run(["export", file, "--to", "airflow"])
        #expect(unknown.exitStatus == 2, "\(unknown)")
    }
}

/// Argo manifests read back with FlowrunYAML, as JSON-shaped values.
enum ArgoManifest {
    struct Unreadable: Error, CustomStringConvertible { var description: String }

    static func documents(_ text: String) throws -> [[String: Any]] {
        let loaded = YAMLLoader(allowsMultipleDocuments: true).load(bytes: Array(text.utf8))
        guard loaded.problems.isEmpty else { throw Unreadable(description: "the manifest is not valid YAML: \(loaded.problems)") }
        return try loaded.documents.map { node in
            guard let object = try json(node) as? [String: Any] else { throw Unreadable(description: "a document is not a mapping") }
            return object
        }
    }

    /// Plain scalars by the core schema; quoted ones are strings.
    static func json(_ node: YAMLNode) throws -> Any {
        switch node.content {
        case .scalar(let scalar):
            if scalar.style != .plain { return scalar.text }
            if let bool = scalar.bool { return bool }
            if let int = scalar.int { return int }
            if scalar.isNull { return NSNull() }
            if let double = scalar.double { return double }
            return scalar.text
        case .sequence(let items):
            return try items.map(json)
        case .mapping(let pairs):
            var object: [String: Any] = [:]
            for pair in pairs {
                guard let key = pair.key.scalar?.text else { throw Unreadable(description: "a non-scalar key") }
                object[key] = try json(pair.value)
            }
            return object
        }
    }

    /// What Argo's controller would reject that its schema lets through.
    static func semanticProblems(_ documents: [[String: Any]]) -> [String] {
        var problems: [String] = []
        let configMaps = documents.filter { $0["kind"] as? String == "ConfigMap" }
        guard let workflow = documents.first(where: { ["Workflow", "WorkflowTemplate"].contains($0["kind"] as? String) }),
              let spec = workflow["spec"] as? [String: Any], let templates = spec["templates"] as? [[String: Any]]
        else { return ["no Workflow with templates"] }
        let templateNames = Set(templates.compactMap { $0["name"] as? String })
        #expect(templateNames.count == templates.count, "template names repeat")
        for key in ["entrypoint", "onExit"] {
            if let name = spec[key] as? String, !templateNames.contains(name) { problems.append("spec.\(key) '\(name)' is no template") }
        }
        let results = "Succeeded|Failed|Errored|Skipped|Omitted|Daemoned|AnySucceeded|AllFailed"
        let taskResult = try! Regex("([a-zA-Z0-9][-a-zA-Z0-9]*)\\.(\(results))")
        for template in templates {
            let name = template["name"] as? String ?? "?"
            // Every {{inputs.parameters.X}} is declared.
            let declared = Set(((template["inputs"] as? [String: Any])?["parameters"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
            var withoutDAG = template
            withoutDAG["dag"] = nil
            for used in references(in: withoutDAG, prefix: "inputs.parameters.") where !declared.contains(used) {
                problems.append("template \(name) uses undeclared input '\(used)'")
            }
            guard let dag = template["dag"] as? [String: Any], let tasks = dag["tasks"] as? [[String: Any]] else { continue }
            let names = tasks.compactMap { $0["name"] as? String }
            let known = Set(names)
            if known.count != names.count { problems.append("template \(name) repeats a task name") }
            var edges: [String: [String]] = [:]
            var usesDepends = false
            var usesDependencies = false
            for task in tasks {
                let taskName = task["name"] as? String ?? "?"
                if let target = task["template"] as? String, !templateNames.contains(target) { problems.append("\(name).\(taskName) runs unknown template '\(target)'") }
                if task["dependencies"] != nil { usesDependencies = true }
                if let depends = task["depends"] as? String {
                    usesDepends = true
                    for match in depends.matches(of: taskResult) {
                        let need = String(depends[match.range].split(separator: ".")[0])
                        if !known.contains(need) { problems.append("\(name).\(taskName) depends on unknown task '\(need)'") }
                        edges[taskName, default: []].append(need)
                    }
                    let bare = depends.replacing(taskResult, with: "").filter { !"()&|! ".contains($0) }
                    if !bare.isEmpty { problems.append("\(name).\(taskName): depends has a bare name or junk: '\(depends)'") }
                }
                for used in references(in: task, prefix: "tasks.") {
                    let target = String(used.split(separator: ".")[0])
                    if !known.contains(target) { problems.append("\(name).\(taskName) reads unknown task '\(target)'") }
                }
            }
            if usesDepends && usesDependencies { problems.append("template \(name) mixes depends and dependencies") }
            if let cycle = cycle(in: edges) { problems.append("template \(name) has a cycle: \(cycle.joined(separator: " -> "))") }
        }
        // Every configMapKeyRef names a key of an emitted ConfigMap.
        for reference in configMapKeyRefs(in: workflow) {
            let found = configMaps.contains { map in
                (map["metadata"] as? [String: Any])?["name"] as? String == reference.name
                    && (map["data"] as? [String: Any])?[reference.key] is String
            }
            if !found { problems.append("configMapKeyRef \(reference.name)/\(reference.key) is in no emitted ConfigMap") }
        }
        return problems
    }

    /// `{{PREFIX…}}` and `PREFIX` accessors in expression tags, as `…`.
    private static func references(in value: Any, prefix: String) -> [String] {
        var found: [String] = []
        func visit(_ value: Any) {
            if let text = value as? String {
                var rest = Substring(text)
                while let start = rest.range(of: "{{") {
                    guard let end = rest[start.upperBound...].range(of: "}}") else { break }
                    let tag = rest[start.upperBound..<end.lowerBound].trimmingCharacters(in: .whitespaces)
                    if tag.hasPrefix(prefix) { found.append(String(tag.dropFirst(prefix.count))) }
                    if tag.hasPrefix("=") {
                        // tasks['x'][...] / inputs['parameters']['x'] in expression templates
                        let root = prefix.split(separator: ".").first.map(String.init) ?? ""
                        var scan = Substring(tag)
                        while let hit = scan.range(of: root + "['") {
                            let after = scan[hit.upperBound...]
                            guard let close = after.firstIndex(of: "'") else { break }
                            var name = String(after[..<close])
                            if prefix == "inputs.parameters.", let next = after[close...].range(of: "['") {
                                let inner = after[next.upperBound...]
                                name = String(inner[..<(inner.firstIndex(of: "'") ?? inner.endIndex)])
                            }
                            found.append(name)
                            scan = after[close...]
                        }
                    }
                    rest = rest[end.upperBound...]
                }
            } else if let list = value as? [Any] {
                list.forEach(visit)
            } else if let object = value as? [String: Any] {
                object.values.forEach(visit)
            }
        }
        visit(value)
        return found
    }

    private static func configMapKeyRefs(in value: Any) -> [(name: String, key: String)] {
        var found: [(String, String)] = []
        func visit(_ value: Any) {
            if let object = value as? [String: Any] {
                if let reference = object["configMapKeyRef"] as? [String: Any] {
                    found.append((reference["name"] as? String ?? "", reference["key"] as? String ?? ""))
                }
                object.values.forEach(visit)
            } else if let list = value as? [Any] {
                list.forEach(visit)
            }
        }
        visit(value)
        return found
    }

    private static func cycle(in edges: [String: [String]]) -> [String]? {
        var state: [String: Int] = [:]
        var path: [String] = []
        func visit(_ node: String) -> [String]? {
            if state[node] == 1 { return path.drop { $0 != node } + [node] }
            if state[node] == 2 { return nil }
            state[node] = 1
            path.append(node)
            for next in edges[node] ?? [] { if let found = visit(next) { return found } }
            path.removeLast()
            state[node] = 2
            return nil
        }
        for node in edges.keys.sorted() { if let found = visit(node) { return found } }
        return nil
    }
}

/// Argo's JSON schema, checked by python3's `jsonschema` on JSON we write ourselves.
enum SchemaValidator {
    static let script = """
        import json, sys
        import jsonschema
        schema = json.load(open(sys.argv[1]))
        validator = jsonschema.Draft202012Validator(schema)
        failed = False
        for document in json.load(open(sys.argv[2])):
            for error in validator.iter_errors(document):
                failed = True
                print("/".join(str(p) for p in error.absolute_path) + ": " + error.message[:400])
        sys.exit(1 if failed else 0)
        """

    /// Whether `python3` with `jsonschema` can run here; CI has both.
    static let available: Bool = (try? python(["-c", "import jsonschema"]).status == 0) ?? false

    static func validate(_ documents: [[String: Any]], label: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        guard available else {
            Issue.record("python3 with jsonschema is not installed (pip install jsonschema); cannot check \(label) against Argo's schema", sourceLocation: sourceLocation)
            return
        }
        #expect(FileManager.default.fileExists(atPath: ExportEndToEndTests.schema), "no schema at \(ExportEndToEndTests.schema)", sourceLocation: sourceLocation)
        let directory = try TemporaryDirectory()
        let json = try JSONSerialization.data(withJSONObject: documents, options: [.sortedKeys])
        let documentsPath = try directory.write(String(decoding: json, as: UTF8.self), to: "manifest.json")
        let scriptPath = try directory.write(script, to: "validate.py")
        let result = try python([scriptPath, ExportEndToEndTests.schema, documentsPath])
        #expect(result.status == 0, "\(label) does not match Argo's schema:\n\(result.output)", sourceLocation: sourceLocation)
    }

    private static func python(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
