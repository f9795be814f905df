@testable import FlowrunModel
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

/// The member names a target can select (issue 23 item 3): known before the
/// run for literal lists, ranges and matrices, by the same rules the engine uses.
@Suite struct MemberNamingTests {
    @Test func staticNamesFollowTheItemsAndVars() throws {
        let parsed = try workflow("""
            vars: { env: prod }
            groups:
              test:
                matrix: { os: [linux, macos], py: ["3.11", "3.12"], exclude: [{ os: macos, py: "3.11" }] }
                task: { run: echo }
              deploy:
                foreach: [{ svc: api, port: 80 }, { svc: web }]
                task: { run: echo }
              named:
                foreach: [a, b]
                task: { name: "${{ vars.env }}-${{ item }}-${{ index }}", run: echo }
              ranged:
                foreach: { range: [5, 7] }
                task: { run: echo }
              later:
                foreach: [a]
                task: { name: "${{ env.HOME }}-${{ item }}", run: echo }
            """)
        var options = PlanOptions()
        options.variables = [("env", "stage")]
        let plan = try Planner.plan(parsed, options: options)
        #expect(plan.staticMemberNames(ofGroup: "test") == ["test[os=linux,py=3.11]", "test[os=linux,py=3.12]", "test[os=macos,py=3.12]"])
        #expect(plan.staticMemberNames(ofGroup: "deploy") == ["deploy[svc=api,port=80]", "deploy[svc=web]"])
        #expect(plan.staticMemberNames(ofGroup: "named") == ["stage-a-0", "stage-b-1"])
        #expect(Planner.staticMemberNames(of: parsed.groups[2], in: parsed) == ["prod-a-0", "prod-b-1"])
        #expect(plan.staticMemberNames(ofGroup: "ranged") == ["ranged[0]", "ranged[1]", "ranged[2]"])
        #expect(plan.staticMemberNames(ofGroup: "later") == nil, "env is read at run time")
        #expect(plan.staticMemberNames(ofGroup: "nope") == nil)
    }

    /// Issue 31: a range member is found by solving its `name:` for the
    /// index, not by listing every name; it finds what the listed names
    /// would (first member wins, GROUP[INDEX] too, nothing that is not a name).
    @Test(arguments: [
        "m-${{ item }}", "${{ item }}", "x${{ index }}-${{ item }}", "${{ vars.tag }}${{ item }}${{ index }}", "${{ vars.tag }}-${{ index }}", "${{ item }}0",
    ])
    func aRangeMemberIsFoundByItsNameAsTheListedNamesWouldFindIt(name: String) throws {
        let parsed = try workflow("""
            vars: { tag: v }
            groups:
              g:
                foreach: { range: [-3, 12] }
                task: { name: "\(name)", run: echo }
            """)
        let graph = DependencyGraph(mainPhaseOf: parsed)
        let table = TargetTable(parsed, graph: graph)
        let names = try #require(MemberNaming.staticNames(of: parsed.groups[0], vars: parsed.vars))
        var first: [String: Int] = [:]
        for (index, member) in names.enumerated() where first[member] == nil { first[member] = index }
        for (member, index) in first {
            #expect(table.target(named: member) == .member(fanOut: graph.indexByName["g[*]"]!, group: graph.indexByName["g"]!, item: index), "\(member)")
        }
        #expect(table.target(named: "g[15]") == .member(fanOut: graph.indexByName["g[*]"]!, group: graph.indexByName["g"]!, item: 15))
        for missing in ["g[16]", "g[-1]", "g[01]", "m-13", "m--4", "m-03", "m-", "v-4-1", "", "x16-13"] where first[missing] == nil {
            #expect(table.target(named: missing) == nil, "\(missing)")
        }
    }

    @Test(arguments: [
        ("whitespace", " jaeger  mongodb\tpostgres\n", ["jaeger", "mongodb", "postgres"]),
        ("lines", "a b\n\n  \n[c]\r\n", ["a b", "[c]"]),
        (",", "a, b ,,c,", ["a", "b", "c"]),
        ("::", "x::y:: z ::", ["x", "y", "z"]),
    ])
    func splitReadsAStringAsItems(separator: String, text: String, items: [String]) {
        let split: FanOutSplit = separator == "whitespace" ? .whitespace : separator == "lines" ? .lines : .separator(separator)
        #expect(split.items(text) == items)
    }
}
