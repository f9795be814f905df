import Foundation
import Testing

extension RunEndToEndParallel {
    /// `vars: { version: { sh: … } }` (SPEC §15, issue 35): computed once per
    /// run by a task of its own, `vars.version`, before the tasks that read it.
    @Suite struct ComputedVariableTests {
        static let workflow = """
            vars:
              version: {sh: "echo run >> $SANDBOX/computed; printf 'v1.2.3\\\\n'"}
            tasks:
              build: {run: "echo build-${{ vars.version }} >> $SANDBOX/out"}
              tag: {run: "echo tag-${{ vars.version }} >> $SANDBOX/out", needs: build}
              other: {run: "true"}
            """

        @Test func theCommandRunsOnceBeforeItsReadersAndItsStdoutIsTheValue() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("out") == ["build-v1.2.3", "tag-v1.2.3"], "\(run)")
            #expect(sandbox.lines("computed") == ["run"], "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses["vars.version"] == "succeeded", "\(run)")
        }

        @Test func varOverridesItWithoutRunningIt() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow, ["--var", "version=v9"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("out") == ["build-v9", "tag-v9"], "\(run)")
            #expect(!sandbox.exists("computed"), "\(run)")
            #expect(try sandbox.record().statuses["vars.version"] == nil, "\(run)")
        }

        @Test func aFailureFailsTheRunBeforeDependentsStartWithTheCommandsStderr() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                vars:
                  version: {sh: "echo 'no tags found' >&2; exit 3"}
                tasks:
                  build: {run: "touch $SANDBOX/built; echo ${{ vars.version }}"}
                """)
            #expect(run.exitStatus == 1, "\(run)")
            #expect(!sandbox.exists("built"), "\(run)")
            #expect(run.stdout.contains("no tags found"), "\(run)")
            #expect(try sandbox.record().statuses == ["vars.version": "failed", "build": "skipped"], "\(run)")
        }

        @Test func theDryRunShowsItAsComputedAndRunsNothing() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow, ["--dry-run"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("(computed at run time by vars.version)"), "\(run.stdout)")
            #expect(run.stdout.contains("needs:     vars.version"), "\(run.stdout)")
            #expect(!sandbox.exists("computed"), "\(run)")
        }

        @Test func aComputedVarWithAnotherKeyIsAnErrorAtItsLine() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                vars:
                  version: {shell: "git describe"}
                tasks:
                  build: {run: "echo ${{ vars.version }}"}
                """)
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains(":2:13: error: a computed vars.version is {sh: COMMAND}, found 'shell'"), "\(run.stderr)")
        }


        /// A mapping takes one key: `sh:` (computed) or `required:` (wt-i), not both.
        @Test func aVarIsComputedOrRequiredNotBoth() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                vars:
                  version: {sh: "git describe", required: true}
                tasks:
                  build: {run: "echo ${{ vars.version }}"}
                """)
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains(":2:13: error: vars.version is either computed, {sh: COMMAND}, or required, {required: true}, not both"), "\(run.stderr)")
        }
    
        /// Argo's parameters are fixed at submit: a computed var is emulated with a warning at its line.
        @Test func theArgoExportWarnsAboutAComputedVarAtItsLine() throws {
            let directory = try TemporaryDirectory()
            let file = try directory.write("""
                vars:
                  version: {sh: "git describe --tags"}
                tasks:
                  build: {run: "echo ${{ vars.version }}"}
                """, to: "computed.yaml")
            let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stderr.contains("computed.yaml:2:3: warning:") && run.stderr.contains("vars.version is computed ({sh: …})"), "\(run.stderr)")
        }
    }
}
