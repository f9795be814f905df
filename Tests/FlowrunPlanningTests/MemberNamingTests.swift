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
