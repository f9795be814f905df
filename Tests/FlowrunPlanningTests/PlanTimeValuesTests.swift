@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

/// `PlanTimeValues`: one rule of what a dry run can fill in, for a whole
/// template (`env:` and `cwd:` lines) and a task's computed expressions.
@Suite struct PlanTimeValuesTests {
    static let text = """
        vars:
          version: { sh: "git describe" }
          plain: x
        env:
          V: "${{ vars.version }}"
          P: "v${{ vars.plain }}"
        tasks:
          a: { run: "echo ${{ format('{0}-{1}', vars.plain, vars.version) }} ${{ format('{0}!', vars.plain) }}", cwd: "/${{ host.os }}" }
        """

    /// A computed var is known only once its task ran: neither filled in
    /// (it once showed as `→ ""`) nor evaluated; a plain var and a host fact are.
    @Test func aComputedVarIsNotFilledInWhilePlainVarsAndHostFactsAre() throws {
        let plan = try Planner.plan(try workflow(Self.text))
        let known = PlanTimeValues(vars: plan.workflow.vars)
        let env = Dictionary(uniqueKeysWithValues: plan.workflow.env.map { ($0.name, $0.value) })
        #expect(known.filledIn(try #require(env["V"])) == nil)
        #expect(known.filledIn(try #require(env["P"])) == "vx")
        let task = try #require(plan.workflow.tasks.first { $0.name == "a" })
        #expect(known.filledIn(try #require(task.cwd)) == "/linux")
        #expect(known.entries(of: task) == [.init(expression: "format('{0}!', vars.plain)", value: "x!"), .init(expression: "host.os", value: "linux")])
    }
}
