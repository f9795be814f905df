@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

/// What a task's identity holds (its resolved definition and its needs'
/// identities) and what it leaves out (timeouts, retries, secrets' values).
@Suite struct TaskIdentityTests {
    static let base = """
        vars: { flavour: plain, token: abcdef }
        secrets: [token]
        tasks:
          fetch: { run: "echo ${{ vars.flavour }}" }
          build: { needs: [fetch], timeout: 5s, run: "make ${{ vars.token }}" }
          other: { run: "true" }
        """

    func identities(_ yaml: String, variables: [(String, String)] = []) throws -> [String: TaskIdentity] {
        var options = PlanOptions()
        options.variables = variables
        return TaskIdentities.compute(for: try Planner.plan(try workflow(yaml), options: options))
    }

    @Test func aChangedScriptChangesTheTaskAndWhatNeedsItButNothingElse() throws {
        let before = try identities(Self.base)
        let after = try identities(Self.base.replacingOccurrences(of: "echo ${{", with: "printf ${{"))
        #expect(after["fetch"]?.hash != before["fetch"]?.hash)
        #expect(after["fetch"]?.changes(from: before["fetch"]?.parts.map { ($0.name, $0.hash) } ?? []) == ["run"])
        #expect(after["build"]?.hash != before["build"]?.hash)
        #expect(after["build"]?.changes(from: before["build"]?.parts.map { ($0.name, $0.hash) } ?? []) == ["needs"])
        #expect(after["other"]?.hash == before["other"]?.hash)
    }

    @Test func aVariableTheScriptReadsIsPartOfItsIdentity() throws {
        let before = try identities(Self.base)
        let after = try identities(Self.base, variables: [("flavour", "spicy")])
        #expect(after["fetch"]?.changes(from: before["fetch"]?.parts.map { ($0.name, $0.hash) } ?? []) == ["run"])
        #expect(after["other"]?.hash == before["other"]?.hash)
    }

    @Test func timeoutsAndSecretValuesAreLeftOut() throws {
        let before = try identities(Self.base)
        #expect(try identities(Self.base.replacingOccurrences(of: "timeout: 5s", with: "timeout: 9s"))["build"]?.hash == before["build"]?.hash)
        #expect(try identities(Self.base, variables: [("token", "zyxwvu")])["build"]?.hash == before["build"]?.hash)
    }

    @Test func aFanOutMembersIdentityIsItsTemplatesWithItsItem() throws {
        let yaml = """
            groups:
              g:
                foreach: [a, b]
                task: { run: "echo ${{ item }}" }
            """
        let template = try #require(try identities(yaml)["g[*]"])
        #expect(template.member(item: "a").hash != template.member(item: "b").hash)
        #expect(template.member(item: "a") == template.member(item: "a"))
    }
}
