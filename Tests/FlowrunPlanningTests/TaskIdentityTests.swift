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

extension TaskIdentityTests {
    /// The hashes a record of an earlier flowrun holds must come out the
    /// same, or `resume` and incremental tasks after an upgrade would take
    /// every task for a changed one. These were written by the release of
    /// 2026-11-28 before its hashing was rewritten without intermediate
    /// strings (`SHA256.field`, `TaskIdentity.hex8`, the shared `needs` part).
    @Test func identitiesAreTheSameAsEarlierReleasesWroteThem() throws {
        let identities = try identities(Self.base)
        #expect(identities["other"]?.hash == Self.earlierHashes["other"], "\(identities["other"]?.parts ?? [])")
        #expect(identities["fetch"]?.hash == Self.earlierHashes["fetch"], "\(identities["fetch"]?.parts ?? [])")
        #expect(identities["build"]?.hash == Self.earlierHashes["build"], "\(identities["build"]?.parts ?? [])")
    }

    static let earlierHashes: [String: String] = [
        "other": "12612b01a66201fcf3126352fb3b7a91fae6c5b7bfc0d33826f387575538bb61",
        "fetch": "95c42f8d3213fc04e894115d97a00415deb3cc64c1c60a8acb5cfe5ddb57c94a",
        "build": "0cb39ba4163122abac6e00ce8300218a52a1e8ee4f7f650a5e1a7006b777a776",
    ]
}
