import Foundation
import Testing

extension RunEndToEndParallel {
    /// `includes:` (SPEC §15): another file's tasks as `NS:NAME`, its needs
    /// and expressions meaning its own names, run in its own folder; a
    /// cycle and an untrusted file are errors at the entry.
    @Suite struct IncludeTests {
        static let including = """
            includes:
              docs: docs/flowrun.yaml
            tasks:
              build: { run: echo "build in $(basename "$PWD")" >> "$SANDBOX/ran" }
              release:
                needs: [build, "docs:publish"]
                run: echo release >> "$SANDBOX/ran"
            """

        static let included = """
            vars: { format: html }
            env: { DOCS_ENV: docs-env }
            tasks:
              build:
                aliases: [b]
                run: echo docs:build ${{ vars.format }} "in $(basename "$PWD") $DOCS_ENV" >> "$SANDBOX/ran"
              publish:
                needs: [build]
                if: ${{ tasks.build.status == 'succeeded' }}
                run: echo "docs:publish" >> "$SANDBOX/ran"
            """

        /// The sandbox with `docs/flowrun.yaml` (mode `mode`) beside the including file.
        static func sandbox(includedMode: Int = 0o644, included: String = included) throws -> (RunSandbox, String) {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("docs"), withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
            let docs = try sandbox.write(workflow: included, to: "docs/flowrun.yaml")
            try FileManager.default.setAttributes([.posixPermissions: includedMode], ofItemAtPath: docs)
            return (sandbox, try sandbox.write(workflow: Self.including))
        }

        @Test func includedTasksRunUnderTheirNamespaceInTheirFolder() throws {
            let (sandbox, file) = try Self.sandbox()
            let run = try FlowrunBinary.run(sandbox.arguments(file, ["release"]), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            let folder = URL(fileURLWithPath: sandbox.path).lastPathComponent
            #expect(Set(sandbox.lines("ran")) == ["build in \(folder)", "docs:build html in docs docs-env", "docs:publish", "release"], "\(run)")
            #expect(sandbox.lines("ran").last == "release")
            #expect(try sandbox.record().statuses == ["build": "succeeded", "docs:build": "succeeded", "docs:publish": "succeeded", "release": "succeeded"])
        }

        @Test func anIncludedAliasAndVarAreNamespacedToo() throws {
            let (sandbox, file) = try Self.sandbox()
            let run = try FlowrunBinary.run(sandbox.arguments(file, ["docs:b", "--var", "docs:format=pdf"]), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("ran") == ["docs:build pdf in docs docs-env"], "\(run)")
            let typo = try FlowrunBinary.run([file, "docs:buld", "--dry-run"])
            #expect(typo.stderr == "flowrun: no task, group, join or fan-out member is named 'docs:buld' (did you mean 'docs:build'?)\n", "\(typo)")
        }

        @Test func anIncludedFileOthersMayWriteIsRefusedAtTheEntry() throws {
            let (sandbox, file) = try Self.sandbox(includedMode: 0o666)
            let run = try FlowrunBinary.run(sandbox.arguments(file, []), in: sandbox.path, environment: sandbox.environment)
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("\(file):2:9: error: included file 'docs/flowrun.yaml' is not trusted: it is writable by"), "\(run)")
            #expect(!sandbox.exists("ran"))
        }

        @Test func aCycleAndTheRunsOwnKeysAreErrorsWhereWritten() throws {
            let (sandbox, file) = try Self.sandbox(included: "includes: { back: ../workflow.yaml }\nshell: bash\ntasks: { a: { run: 'true' } }\n")
            let run = try FlowrunBinary.run(["validate", file], in: sandbox.path)
            #expect(run.exitStatus == 2, "\(run)")
            let docs = sandbox.file("docs/flowrun.yaml")
            #expect(run.stderr.contains("\(docs):1:19: error: including '../workflow.yaml' makes a cycle"), "\(run)")
            #expect(run.stderr.contains("\(docs):2:1: error: 'shell' is not read from an included file"), "\(run)")
        }
    }
}
