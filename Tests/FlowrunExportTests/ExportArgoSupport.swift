@testable import FlowrunModel
@testable import FlowrunPlanning
@testable import FlowrunExport
import FlowrunTestSupport
import Foundation
import Testing

/// Golden files for `flowrun export --to argo`: `Tests/Fixtures/argo/NAME.yaml`
/// holds the manifest and, as leading `#! ` lines, the diagnostics.
/// `FLOWRUN_UPDATE_GOLDEN=1 swift test --filter Export` rewrites them.
enum ArgoGolden {
    static let folder: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/argo").path

    /// Exports `yaml` (as the file `test.yaml`) and renders diagnostics + manifest.
    static func render(_ yaml: String, options: ArgoExportOptions = ArgoExportOptions(), sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> String {
        let validated = try workflow(yaml, sourceLocation: sourceLocation)
        let plan = try Planner.plan(validated)
        let result = ArgoExport.export(plan, options: options)
        let diagnostics = result.diagnostics.map { "#! \($0.description)\n" }.joined()
        return diagnostics + (result.manifest ?? "# (no manifest)\n")
    }

    static func expect(_ name: String, _ yaml: String, options: ArgoExportOptions = ArgoExportOptions(), sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        let actual = try render(yaml, options: options, sourceLocation: sourceLocation)
        let path = folder + "/" + name + ".yaml"
        if ProcessInfo.processInfo.environment["FLOWRUN_UPDATE_GOLDEN"] == "1" {
            try actual.write(toFile: path, atomically: true, encoding: .utf8)
            return
        }
        let expected = try String(contentsOfFile: path, encoding: .utf8)
        #expect(actual == expected, "golden \(name).yaml differs; diff it, then FLOWRUN_UPDATE_GOLDEN=1 to accept:\n\(actual)", sourceLocation: sourceLocation)
    }

    /// Diagnostics only.
    static func diagnostics(_ yaml: String, options: ArgoExportOptions = ArgoExportOptions()) throws -> [String] {
        let plan = try Planner.plan(try workflow(yaml))
        return ArgoExport.export(plan, options: options).diagnostics.map(\.description)
    }
}
