@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

/// Issue 31: a `foreach` that reads only `vars` is sized when the run is
/// planned, by the rules a run reads a computed value with.
@Suite struct FanOutSizingTests {
    static let text = """
        vars:
          lines: "a\\n\\n b \\r\\n"
          words: "x y  z"
          array: '["p", 2, true]'
          objects: '[{"db": "main"}, {"db": "logs"}]'
        tasks:
          list: { run: "echo" }
        groups:
          lined:
            foreach: ${{ vars.lines }}
            task: { run: echo }
          split:
            foreach: ${{ vars.words }}
            split: whitespace
            task: { run: echo }
          scalars:
            foreach: ${{ vars.array }}
            task: { run: echo }
          named:
            foreach: ${{ vars.objects }}
            task: { name: "restore-${{ item.db }}", run: echo }
          unnamed:
            foreach: ${{ vars.objects }}
            task: { run: echo }
          read:
            needs: [list]
            foreach: ${{ tasks.list.stdout }}
            task: { run: echo }
        """

    @Test func aForeachOverVarsBecomesItsItems() throws {
        let plan = try Planner.plan(try workflow(Self.text))
        let counts = Dictionary(plan.steps.filter { $0.kind == .fanOut }.map { ($0.group ?? "", $0.fanOutCount) }, uniquingKeysWith: { first, _ in first })
        #expect(counts["lined"] == 2 && counts["split"] == 3 && counts["scalars"] == 3 && counts["named"] == 2)
        #expect(counts["unnamed"] == .some(nil), "records without name: keep GROUP[INDEX]: sized at run time")
        #expect(counts["read"] == .some(nil), "a task's stdout only the run has")
        #expect(plan.staticMemberNames(ofGroup: "lined") == ["lined[0]", "lined[1]"])
        #expect(plan.staticMemberNames(ofGroup: "named") == ["restore-main", "restore-logs"])
        guard case .list(let lines)? = plan.workflow.groups.first(where: { $0.name == "lined" })?.fanOut?.source else {
            Issue.record("lined is not a list")
            return
        }
        #expect(lines == ["a", " b "], "blank lines skipped, one trailing CR dropped, spaces kept")
    }

    @Test func varOverridesAreSizedAndATargetFindsTheirMembers() throws {
        var options = PlanOptions()
        options.variables = [("objects", #"[{"db": "audit"}]"#)]
        options.only = ["restore-audit"]
        let plan = try Planner.plan(try workflow(Self.text), options: options)
        let fanOut = try #require(plan.steps.first { $0.kind == .fanOut })
        #expect(fanOut.group == "named" && fanOut.fanOutItems == [0] && fanOut.fanOutCount == 1)
    }

    @Test func exportKeepsTheExpression() throws {
        var options = PlanOptions()
        options.sizesFanOutsOverVars = false
        let plan = try Planner.plan(try workflow(Self.text), options: options)
        #expect(plan.steps.filter { $0.kind == .fanOut }.allSatisfy { $0.fanOutCount == nil })
    }
}
