import Foundation
import Testing

extension RunEndToEndParallel {
    /// A matrix whose `include` entries differ only in keys that are not
    /// axes (SPEC §15, issue 35): valid, as on GitHub; members named by
    /// index where the axis values repeat (refused before: `members 1 and 2
    /// … would both be named 'test[os=macos]'`).
    @Suite struct MatrixRepeatTests {
        static let workflow = """
            groups:
              test:
                matrix:
                  os: [linux]
                  include:
                    - {os: macos, arch: x64}
                    - {os: macos, arch: arm64}
                task: {run: "echo ${{ item.os }}-${{ item.arch }} >> $SANDBOX/ran"}
            """

        @Test func includesThatDifferOnlyInExtraKeysAllRunNamedByIndex() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("ran").sorted() == ["linux-", "macos-arm64", "macos-x64"], "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses["test[os=linux]"] == "succeeded", "\(run)")
            #expect(record.statuses["test[1]"] == "succeeded" && record.statuses["test[2]"] == "succeeded", "\(run)")
        }

        @Test func aMemberNamedByIndexIsATarget() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow, ["test[2]"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("ran") == ["macos-arm64"], "\(run)")
        }

        @Test func theDryRunAndTheArgoExportNameThemAlike() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow, ["--dry-run"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("test[1]         {os: macos, arch: x64}"), "\(run.stdout)")
            let file = try sandbox.write(workflow: Self.workflow)
            let export = try FlowrunBinary.run(["export", file, "--to", "argo"])
            #expect(export.exitStatus == 0, "\(export)")
            #expect(export.stdout.contains("test[1]") && export.stdout.contains("test[os=linux]"), "\(export.stdout)")
        }
    }
}
