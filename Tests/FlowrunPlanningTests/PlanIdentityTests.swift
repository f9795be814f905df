@testable import FlowrunModel
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

/// `TaskIdentities.planIdentity`: the one fingerprint of every identity a
/// killed engine's record keeps for `resume` (`run_killed`'s `plan_identity`).
@Suite struct PlanIdentityTests {
    func planIdentity(_ yaml: String, variables: [(String, String)] = []) throws -> String {
        var options = PlanOptions()
        options.variables = variables
        let plan = try Planner.plan(try workflow(yaml), options: options)
        return TaskIdentities.planIdentity(TaskIdentities.compute(for: plan), steps: (plan.steps + plan.finallySteps).map(\.name))
    }

    static let base = """
        vars: { target: prod }
        tasks:
          build: { run: make }
          deploy: { needs: [build], run: "deploy ${{ vars.target }}" }
        groups:
          fan: { foreach: [a, b], task: { run: "echo ${{ item }}" } }
        finally:
          tidy: { run: rm -rf tmp }
        """

    @Test func theSameWorkflowGivesTheSameFingerprint() throws {
        let first = try planIdentity(Self.base)
        #expect(first == (try planIdentity(Self.base)))
        #expect(first.count == 32 && first.allSatisfy(\.isHexDigit))
        // Timeouts and retries are not part of any identity.
        #expect(first == (try planIdentity(Self.base.replacingOccurrences(of: "run: make }", with: "run: make, timeout: 5s, retries: 2 }"))))
    }

    @Test(arguments: [
        ("run: make }", "run: make all }"),                 // a script
        ("target: prod", "target: staging"),              // a var a task reads
        ("foreach: [a, b]", "foreach: [a, c]"),           // a fan-out's items
        ("rm -rf tmp", "rm -rf tmp2"),                    // a finally task
        ("deploy: { needs: [build],", "deploy: {"),        // needs
    ])
    func anyChangeToAnIdentityChangesIt(_ change: (String, String)) throws {
        let changed = Self.base.replacingOccurrences(of: change.0, with: change.1)
        #expect(changed != Self.base)
        #expect(try planIdentity(Self.base) != planIdentity(changed))
    }
}
