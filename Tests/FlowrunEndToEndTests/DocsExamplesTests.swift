import Foundation
import Testing

/// The docs cannot go stale: every YAML example in README.md and docs/*.md
/// is validated by the built binary (or fails with exactly the error the
/// text shows), and every shown command runs and prints what the text shows.
/// The conventions are in docs/WRITING-DOCS.md.
@Suite struct DocsExamplesTests {
    static var documents: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: DocsPathsTests.root + "/docs")) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }

    @Test func everyExampleInTheDocsIsWhatTheBinaryDoes() throws {
        #expect(Self.documents.count >= 8, "found only \(Self.documents)")
        var total = DocExampleChecker.Report()
        for document in Self.documents {
            let checker = DocExampleChecker(
                document: document, markdown: try DocsPathsTests.read(document),
                workflowsFolder: DocsPathsTests.root + "/workflows")
            let report = try checker.check()
            total.problems += report.problems
            total.workflowsValidated += report.workflowsValidated
            total.invalidExamplesChecked += report.invalidExamplesChecked
            total.commandsRun += report.commandsRun
            total.unchecked += report.unchecked
        }
        print("""
            docs examples: \(total.workflowsValidated) workflows validated, \(total.invalidExamplesChecked) invalid examples \
            failed as shown, \(total.commandsRun) commands run; \(total.unchecked.count) blocks not checked:
            \(total.unchecked.map { "  " + $0 }.joined(separator: "\n"))
            """)
        for problem in total.problems { Issue.record(Comment(rawValue: problem)) }
        // A parser that finds nothing would pass everything.
        #expect(total.workflowsValidated >= 15 && total.commandsRun >= 15, "checked too little: \(total.workflowsValidated) workflows, \(total.commandsRun) commands")
    }

    /// The checker itself on a small document with one stale thing of each kind.
    @Test func aStaleExampleOfEachKindIsReported() throws {
        let document = """
            A workflow that no longer validates:

            ```yaml
            tasks:
              build: { run: make, tiemout: 5s }
            ```

            An invalid example whose error changed:

            <!-- invalid -->
            ```yaml
            # broken.yaml
            tasks:
              build: { run: make, tiemout: 5s }
            ```

            ```text
            broken.yaml:2:23: error: unknown key 'tiemout'
            ```

            A command whose output changed, one that fails without output, and one that matches:

            ```console
            $ flowrun validate broken.yaml
            broken.yaml:2:23: error: something else
            1 error
            $ flowrun validate missing.yaml
            $ flowrun validate workflows/downloads.yaml
            workflows/downloads.yaml: valid (…)
            ```

            <!-- fragmnet: a typo in a marker -->
            ```yaml
            build: { run: make }
            ```
            """
        let checker = DocExampleChecker(document: "STALE.md", markdown: document, workflowsFolder: DocsPathsTests.root + "/workflows")
        let report = try checker.check()
        let places = report.problems.map { String($0.prefix { $0 != " " }) }
        #expect(places == ["STALE.md:3:", "STALE.md:17:", "STALE.md:24:", "STALE.md:27:", "STALE.md:33:"], "\(report.problems)")
        #expect(report.commandsRun == 3 && report.workflowsValidated == 1 && report.invalidExamplesChecked == 1)
    }

    @Test func shownOutputTakesEllipsisForAnythingAndNormalisesTimesIdsAndDurations() {
        let actual = """
            13:36:48.321 run      ci started (3 tasks, record .flowrun/runs/20261125-133648-e5ff3a90c4d1b827)
            13:36:48.350 ok       build (0.03s)
            13:36:48.357 FAILED   test (exit 1, 0.01s)
            """
        #expect(ShownOutput.matches(shown: [
            "09:00:00.000 run      ci started (3 tasks, record .flowrun/runs/20200101-000000-0123456789abcdef)",
            "…",
            "09:00:00.000 FAILED   test (exit 1, 2.50s)",
        ], actual: actual))
        #expect(ShownOutput.matches(shown: ["…", "… ok       build …", "…"], actual: actual))
        #expect(!ShownOutput.matches(shown: ["…", "… ok       lint …", "…"], actual: actual))
        #expect(!ShownOutput.matches(shown: ["… run      ci started (4 tasks, …)", "…"], actual: actual))
        // Durations without a decimal point are settings, not measurements: compared as written.
        #expect(!ShownOutput.matches(shown: ["timeout 5s"], actual: "timeout 3s"))
    }
}
