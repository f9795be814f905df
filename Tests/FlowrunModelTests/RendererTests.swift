@testable import FlowrunModel
@testable import FlowrunLoading
import FlowrunTestSupport
import Testing

@Suite struct RendererTests {
    @Test func terminalOutputShowsTheLineAndACaretUnderTheColumn() {
        let diagnostic = Diagnostic.error("unknown key 'tiemout'", at: SourceLocation(file: "w.yaml", line: 2, column: 9))
        let lines: [Substring] = ["tasks:", "  a: {  tiemout: 1s }"]
        let rendered = DiagnosticRenderer(showsSourceLines: true, usesColor: false).render(diagnostic, lines: lines)
        #expect(rendered == """
            w.yaml:2:9: error: unknown key 'tiemout'
              a: {  tiemout: 1s }
                    ^
            """)
    }

    @Test func plainOutputIsOneLineAndColourIsOptIn() {
        let diagnostic = Diagnostic.warning("slow", at: SourceLocation(file: "w.yaml", line: 1, column: 1))
        #expect(DiagnosticRenderer(showsSourceLines: false, usesColor: false).render(diagnostic, lines: ["x"]) == "w.yaml:1:1: warning: slow")
        let colored = DiagnosticRenderer(showsSourceLines: false, usesColor: true).render(diagnostic, lines: ["x"])
        #expect(colored.contains("\u{1B}["))
    }

    @Test func suggestionsAllowAboutOneEditPerThreeLetters() {
        #expect(Suggestion.nearest(to: "tiemout", in: WorkflowDecoder.taskKeys) == "timeout")
        #expect(Suggestion.nearest(to: "neds", in: WorkflowDecoder.taskKeys) == "needs")
        #expect(Suggestion.nearest(to: "colour", in: WorkflowDecoder.topLevelKeys) == nil)
    }

    @Test func expressionsPrintBackWithTheNeededParentheses() throws {
        let workflow = try workflow("""
            tasks:
              a: { sleep: 0 }
              b: { sleep: 0, needs: a, if: "!(tasks.a.status == 'failed' || 1 < 2) && true" }
            """)
        #expect(workflow.tasks[1].condition?.value.description == "!(tasks.a.status == 'failed' || 1 < 2) && true")
    }
}
