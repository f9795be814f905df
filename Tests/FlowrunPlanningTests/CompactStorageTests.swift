@testable import FlowrunModel
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

/// The compact forms that keep 20,000 tasks in ~0.7 KB each (identities,
/// definitions and steps with their rare fields behind a reference, literal
/// templates) read back exactly what was put in, and stay values.
@Suite struct CompactStorageTests {
    /// Identities the release before the compact form recorded for
    /// `TaskIdentityTests.base` (summary.json of a run of that file): a
    /// resume across the change must find every task unchanged.
    @Test func identitiesAreTheOnesRecordedBeforeTheCompactForm() throws {
        let identities = TaskIdentities.compute(for: try Planner.plan(try workflow(TaskIdentityTests.base)))
        #expect(identities["fetch"]?.hash == "95c42f8d3213fc04e894115d97a00415deb3cc64c1c60a8acb5cfe5ddb57c94a")
        #expect(identities["other"]?.hash == "12612b01a66201fcf3126352fb3b7a91fae6c5b7bfc0d33826f387575538bb61")
        #expect(identities["build"]?.hash == "0cb39ba4163122abac6e00ce8300218a52a1e8ee4f7f650a5e1a7006b777a776")
        let parts = identities["build"]?.parts.map { "\($0.name)=\($0.hash)" }
        #expect(parts == ["run=80095933", "env=0f6967bf", "cwd=ba768b33", "shell=ad190313", "when=364749aa", "sources=203a8546", "needs=d6e4ef58"])
        // A member's: its template's and its item's, parts plus `item`.
        let member = identities["other"]?.member(item: "x")
        #expect(member?.parts.last?.name == "item")
        #expect(member?.parts.count == 8)
    }

    @Test func aCopiedDefinitionKeepsItsOwnRareFields() throws {
        let plan = try Planner.plan(try workflow("""
            tasks:
              a: { run: "true", cwd: /tmp, retries: 2, retry_delay: 3s }
              b: { run: "true" }
            """))
        var copy = try #require(plan.steps.first { $0.name == "a" }?.task)
        let original = copy
        copy.cwd = nil
        copy.description = "changed"
        #expect(original.cwd?.source == "/tmp")
        #expect(original.description == nil)
        #expect(original.retryDelay == .seconds(3))
        #expect(copy.retryDelay == .seconds(3))
        let plain = try #require(plan.steps.first { $0.name == "b" }?.task)
        #expect(plain.cwd == nil && plain.retryDelay == .seconds(1) && plain.backoff == 2 && plain.sources.isEmpty)
    }

    @Test func aStepsLocationIsItsTasksOrItsOwn() throws {
        let plan = try Planner.plan(try workflow("""
            tasks:
              a: { run: "true" }
            groups:
              g:
                tasks:
                  m: { run: "true" }
            """))
        let a = try #require(plan.steps.first { $0.name == "a" })
        let g = try #require(plan.steps.first { $0.name == "g" })
        #expect(a.location == a.task?.location)
        #expect(g.location.line == 4)
        var moved = a
        moved.location = SourceLocation(file: a.location.file, line: 99, column: 1)
        #expect(moved.location.line == 99 && a.location.line == 2)
    }

    @Test func aLiteralTemplateIsItsOneTextSegment() {
        let at = SourceLocation(file: "f", line: 1, column: 1)
        var literal = Template(source: "echo hi", segments: [.text("echo hi")], location: at)
        #expect(literal.segments.count == 1)
        if case .text(let text)? = literal.segments.first { #expect(text == "echo hi") } else { Issue.record("not one text segment") }
        // The segments stay what they were when the source alone changes.
        literal.source = "echo bye"
        if case .text(let text)? = literal.segments.first { #expect(text == "echo hi") } else { Issue.record("not one text segment") }
        #expect(Template(source: "x", segments: [], location: at).segments.isEmpty)
        #expect(Template(source: "", segments: [.text("")], location: at).segments.count == 1)
    }
}
