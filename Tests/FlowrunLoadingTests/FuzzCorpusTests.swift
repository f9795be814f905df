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
        // CPU time of this thread, not wall time: the bound catches work that
        // grows out of hand (the slow/ regressions), and a loaded machine
        // (CI's parallel tests on 2 cores) stretched the wall time past it.
        let start = Self.threadCPUSeconds()
        let result = WorkflowValidator.validate(bytes: bytes, file: path)
        if let workflow = result.workflow, let plan = try? Planner.plan(workflow) {
            #expect(!plan.text.isEmpty)
            #expect(!plan.json.isEmpty)
        } else {
            #expect(result.diagnostics.hasErrors, "an invalid input is reported with at least one error")
        }
        #expect(Self.threadCPUSeconds() - start < 2, "validating and planning took \(Self.threadCPUSeconds() - start) s of CPU")
    }

    static func threadCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
