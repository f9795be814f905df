import FlowrunLoading
import Foundation
import Testing

/// `schema/flowrun.schema.json`, the editor schema (issue 19.1), and the
/// validator accept the same files: every recipe in `workflows/` passes both,
/// both know the same keys in every place, and a misspelt key fails both.
@Suite struct WorkflowSchemaTests {
    static let package: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // FlowrunEndToEndTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // the package
    static let schemaPath = package.appendingPathComponent("schema/flowrun.schema.json").path

    /// The schema's keys per place: the top level's `properties`, and each
    /// definition's (`$defs/task/properties`, …) that describes a mapping of fixed keys.
    static func schemaKeys() throws -> [String: Set<String>] {
        let data = try Data(contentsOf: URL(fileURLWithPath: schemaPath))
        let schema = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let definitions = try #require(schema["$defs"] as? [String: Any])
        var keys: [String: Set<String>] = [:]
        keys["workflow"] = Set(try #require(schema["properties"] as? [String: Any]).keys)
        for context in ["task", "fanOutTask", "template", "group", "join", "http", "readyProbe"] {
            let definition = try #require(definitions[context] as? [String: Any], "the schema has no $defs/\(context)")
            #expect(definition["additionalProperties"] as? Bool == false, "$defs/\(context) must refuse unknown keys")
            keys[context] = Set(try #require(definition["properties"] as? [String: Any]).keys)
        }
        return keys
    }

    @Test func theSchemaAndTheValidatorAcceptTheSameKeysInEveryPlace() throws {
        let schema = try Self.schemaKeys()
        let validator = WorkflowKeys.byContext.mapValues(Set.init)
        #expect(Set(validator.keys).isSubset(of: Set(schema.keys)), "a place the validator knows is missing from the test's walk of the schema")
        var onlyInSchema: Set<String> = []
        var onlyInValidator: Set<String> = []
        for context in Set(schema.keys).union(validator.keys) {
            let inSchema = schema[context] ?? []
            let inValidator = validator[context] ?? []
            onlyInSchema.formUnion(inSchema.subtracting(inValidator).map { "\(context).\($0)" })
            onlyInValidator.formUnion(inValidator.subtracting(inSchema).map { "\(context).\($0)" })
        }
        #expect(onlyInValidator.isEmpty, "keys the validator accepts but the schema lacks: \(onlyInValidator.sorted())")
        #expect(onlyInSchema.isEmpty, "keys only in the schema: \(onlyInSchema.sorted())")
    }

    /// Validates YAML files against the schema with python3's jsonschema;
    /// prints `FILE<TAB>problem` per problem (draft 2020-12, after checking
    /// the schema itself).
    static let validateScript = """
        import json, sys, yaml, jsonschema
        schema = json.load(open(sys.argv[1]))
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        for path in sys.argv[2:]:
            for error in validator.iter_errors(yaml.safe_load(open(path))):
                print("%s\\t%s at /%s" % (path, error.message, "/".join(map(str, error.absolute_path))))
        """

    static func schemaProblems(_ files: [String]) throws -> [(file: String, message: String)] {
        let result = try PythonScript.run(Self.validateScript, arguments: [schemaPath] + files, modules: ["yaml", "jsonschema"])
        try #require(result.exitStatus == 0, "the schema check did not run: \(result.stderr)")
        return result.stdout.split(separator: "\n").map { line in
            let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }

    @Test func everyRecipeInWorkflowsValidatesAgainstTheSchema() throws {
        let files = WorkflowsTests.files
        #expect(files.count >= 4, "no recipes found in \(WorkflowsTests.folder)")
        let problems = try Self.schemaProblems(files)
        #expect(problems.isEmpty, "\(problems.map { "\($0.file): \($0.message)" }.joined(separator: "\n"))")
    }

    /// One misspelling in each place a key can go: both refuse the file, and
    /// both name the misspelt key.
    @Test(arguments: [
        ("fail_fats: true\ntasks: {a: {run: 'true'}}\n", "fail_fats"),
        ("tasks: {a: {run: 'true', tiemout: 5s}}\n", "tiemout"),
        ("tasks: {a: {http: {url: 'http://x', methd: GET}}}\n", "methd"),
        ("groups: {g: {concurency: 2, tasks: {a: {run: 'true'}}}}\n", "concurency"),
        ("groups: {g: {foreach: [x], task: {run: 'true', nmae: 'a-${{ item }}'}}}\n", "nmae"),
        ("tasks: {a: {run: 'true'}}\njoins: {j: {wait: [a], on_timout: fail}}\n", "on_timout"),
    ])
    func aMisspeltKeyIsRejectedByBoth(_ text: String, _ key: String) throws {
        let scratch = try TemporaryDirectory(prefix: "flowrun-schema")
        let file = try scratch.write(text, to: "misspelt.yaml")
        let run = try FlowrunBinary.run(["validate", file])
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.contains("unknown key '\(key)'"), "\(run)")
        let problems = try Self.schemaProblems([file])
        #expect(problems.contains { $0.message.contains("'\(key)' was unexpected") }, "the schema accepted '\(key)': \(problems)")
    }

    /// The schema's patterns for names and durations agree with the validator
    /// on values either side of the line.
    @Test(arguments: [
        ("tasks: {a: {run: 'true', timeout: 1h30m}}\n", true),
        ("tasks: {a: {run: 'true', timeout: 1.5}}\n", true),
        ("tasks: {a: {run: 'true', timeout: 250ms}}\n", true),
        ("tasks: {a: {sleep: 1s..3s}}\n", true),
        ("tasks: {a: {run: 'true', timeout: 5 minutes}}\n", false),
        ("tasks: {a: {run: 'true', timeout: 1s..3s}}\n", false),
        ("tasks: {a: {sleep: soon}}\n", false),
        ("tasks: {-a: {run: 'true'}}\n", false),
        ("tasks: {a: {run: 'true', when: sometimes}}\n", false),
        ("tasks: {a: {run: 'true', sleep: 1s}}\n", false),
        ("tasks: {a: {needs: [b]}}\n", false),
        ("max_parallel: 0\ntasks: {a: {run: 'true'}}\n", false),
    ])
    func namesAndDurationsAreCheckedAlikeByBoth(_ text: String, _ valid: Bool) throws {
        let scratch = try TemporaryDirectory(prefix: "flowrun-schema")
        let file = try scratch.write(text, to: "values.yaml")
        let run = try FlowrunBinary.run(["validate", file])
        run.expectNoCrash()
        #expect(run.exitStatus == (valid ? 0 : 2), "\(run)")
        let problems = try Self.schemaProblems([file])
        #expect(problems.isEmpty == valid, "schema: \(problems)")
    }
}
