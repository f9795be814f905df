@testable import FlowrunModel
@testable import FlowrunLoading
@testable import FlowrunPlanning
import FlowrunTestSupport
import Foundation
import Testing

/// Replays the fuzzer's seed corpus and every crash it ever found through the
/// whole pipeline (load, validate, plan, render): none may crash or hang.
@Suite struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every file under `folder`, subfolders included.
    static func inputs(in folder: String) -> [String] {
        let url = root.appendingPathComponent(folder)
        let paths = FileManager.default.enumerator(atPath: url.path)?.compactMap { $0 as? String } ?? []
        return paths.filter { !$0.split(separator: "/").contains { $0.hasPrefix(".") } }.sorted()
            .map { url.appendingPathComponent($0).path }
            .filter { var isDirectory: ObjCBool = false; return FileManager.default.fileExists(atPath: $0, isDirectory: &isDirectory) && !isDirectory.boolValue }
    }

    @Test func seedCorpusIsPresent() {
        #expect(Self.inputs(in: "Fuzz/corpus").count >= 10, "Fuzz/corpus holds the fuzzer's seed corpus")
    }

    @Test(arguments: inputs(in: "Fuzz/corpus") + inputs(in: "Tests/Fixtures/fuzz-regressions"))
    func inputRunsThroughThePipeline(path: String) throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let start = ContinuousClock.now
        let result = WorkflowValidator.validate(bytes: bytes, file: path)
        if let workflow = result.workflow, let plan = try? Planner.plan(workflow) {
            #expect(!plan.text.isEmpty)
            #expect(!plan.json.isEmpty)
        } else {
            #expect(result.diagnostics.hasErrors, "an invalid input is reported with at least one error")
        }
        #expect(ContinuousClock.now - start < .seconds(2))
    }
}
