@testable import FlowrunModel
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

/// Planning what a run runs (SPEC §10): targets, `default:`, fan-out members,
/// and the order of a sequential group.
@Suite struct TargetSelectionTests {
    static let text = """
        default: [test]
        tasks:
          gen: { run: "true" }
          build: { run: "true", needs: gen }
          test: { run: "true", needs: build }
          lint: { run: "true" }
        groups:
          shards:
            needs: gen
            foreach: [a, c, b]
            task: { name: "shard-${{ item }}", run: "true" }
          release:
            sequential: true
            tasks:
              tag: { run: "true" }
              upload: { run: "true" }
              announce: { run: "true" }
        """

    @Test func theDefaultAppliesOnlyToARun() throws {
        let workflow = try workflow(Self.text)
        #expect(try Planner.plan(workflow).steps.count == 10, "list, graph and export plan everything")
        var options = PlanOptions()
        options.runsDefaultTargets = true
        let plan = try Planner.plan(workflow, options: options)
        #expect(plan.steps.map(\.name) == ["gen", "build", "test"])
        #expect(plan.only == ["test"] && plan.targetsAreDefault)
    }

    @Test func aMemberSelectsItsItemsByTheirWholeRunNames() throws {
        var options = PlanOptions()
        options.only = ["shard-c"]
        let plan = try Planner.plan(try workflow(Self.text), options: options)
        #expect(plan.steps.map(\.name) == ["gen", "shards[*]", "shards"])
        #expect(plan.steps[1].fanOutItems == [1])
        #expect(plan.steps[1].fanOutCount == 1)
        options.only = ["shards[2]", "shards"]
        let whole = try Planner.plan(try workflow(Self.text), options: options)
        #expect(whole.steps.first { $0.name == "shards[*]" }?.fanOutItems == nil, "the whole group was named too")
    }

    @Test func sequentialMembersChainInWrittenOrderAmongThoseSelected() throws {
        let plan = try Planner.plan(try workflow(Self.text))
        let after = Dictionary(plan.steps.map { ($0.name, $0.runsAfter ?? "-") }, uniquingKeysWith: { first, _ in first })
        #expect(after["tag"] == "-" && after["upload"] == "tag" && after["announce"] == "upload")
        var options = PlanOptions()
        options.only = ["announce", "tag"]
        let some = try Planner.plan(try workflow(Self.text), options: options)
        #expect(some.steps.map { "\($0.name)<\($0.runsAfter ?? "-")" }.sorted() == ["announce<tag", "tag<-"])
    }

    @Test func staticMemberNamesAreTheEnginesNames() throws {
        let workflow = try workflow(Self.text)
        let group = try #require(workflow.groups.first { $0.name == "shards" })
        #expect(MemberNaming.staticNames(of: group, vars: workflow.vars) == ["shard-a", "shard-c", "shard-b"])
    }
}
