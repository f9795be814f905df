import Foundation
import Testing

extension RunEndToEndParallel {
    /// `vars: { X: { required: true } }` (SPEC §15, go-task's `requires:`):
    /// a run without `--var X=…` or `X` in the environment runs nothing and
    /// names each missing variable where it is declared.
    @Suite struct RequiredVariableTests {
        static let workflow = """
            vars:
              version: { required: true }
              stage: { required: true }
            tasks:
              release:
                run: echo ${{ vars.version }} ${{ vars.stage }} >> "$SANDBOX/ran"
            """

        @Test func aMissingRequiredVariableStopsTheRunNamingIt() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow, ["--var", "stage=prod"])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("workflow.yaml:2:3: variable 'version' is required: pass --var version=VALUE, or set version in the environment"), "\(run)")
            #expect(!run.stderr.contains("'stage'"), "\(run)")
            #expect(!sandbox.exists("ran"))
        }

        @Test func aVarOrTheEnvironmentGivesIt() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow, ["--var", "version=1.4.0"], environment: ["stage": "staging"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("ran") == ["1.4.0 staging"], "\(run)")
        }
    }
}
