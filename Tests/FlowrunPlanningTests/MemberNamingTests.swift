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

    /// Issue 31: numbers are read digit by digit and given up past the
    /// range's ends, `Int`'s too: every member at either end is still found
    /// as the listed names find it, and nothing else is.
    @Test(arguments: [(-1_000_000_000_000_000, -999_999_999_999_990), (999_999_999_999_990, 1_000_000_000_000_000), (-4, 4)])
    func aRangeMemberAtEitherEndIsFoundDigitByDigit(low: Int, high: Int) throws {
        let parsed = try workflow("""
            groups:
              g:
                foreach: { range: [\(low), \(high)] }
                task: { name: "${{ item }}${{ index }}", run: echo }
            """)
        let template = try #require(parsed.groups[0].fanOut?.template.nameTemplate)
        let names = try #require(MemberNaming.staticNames(of: parsed.groups[0], vars: []))
        var first: [String: Int] = [:]
        for (index, member) in names.enumerated() where first[member] == nil { first[member] = index }
        for (member, index) in first {
            #expect(MemberNaming.rangeMember(named: member, template: template, low: low, count: names.count, vars: []) == index, "\(member)")
        }
        for missing in ["\(high)\(names.count)", "\(low)-1", "-0\(low)", "\(low)", String(repeating: "9", count: 40), "-" + String(repeating: "9", count: 40)]
        where first[missing] == nil {
            #expect(MemberNaming.rangeMember(named: missing, template: template, low: low, count: names.count, vars: []) == nil, "\(missing)")
        }
        // Int's own ends: read without overflow, refused past them.
        #expect(MemberNaming.rangeMember(named: "\(Int.min)0", template: template, low: .min, count: 3, vars: []) == 0)
        #expect(MemberNaming.rangeMember(named: "\(Int.max)2", template: template, low: .max - 2, count: 3, vars: []) == 2)
        #expect(MemberNaming.rangeMember(named: "\(Int.max)0", template: template, low: .max - 2, count: 3, vars: []) == nil)
    }

    /// A name longer than any member's is no member's, however it is made.
    @Test func aNameLongerThanAnyMembersIsRefusedUnread() throws {
        let parsed = try workflow("""
            groups:
              g:
                foreach: { range: [-5, 9999994] }
                task: { name: "${{ item }}${{ index }}", run: echo }
            """)
        let template = try #require(parsed.groups[0].fanOut?.template.nameTemplate)
        // The longest: item 9999994 (7 bytes), index 9999999 (7 bytes).
        #expect(MemberNaming.rangeMember(named: "99999949999999", template: template, low: -5, count: 10_000_000, vars: []) == 9_999_999)
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            #expect(MemberNaming.rangeMember(named: String(repeating: "1", count: 300_000), template: template, low: -5, count: 10_000_000, vars: []) == nil)
            #expect(MemberNaming.rangeMember(named: "1" + String(repeating: "0", count: 14), template: template, low: -5, count: 10_000_000, vars: []) == nil)
        }
        // Before, 300,000 digits took minutes (each digit read the whole prefix again).
        #expect(elapsed < .seconds(1), "\(elapsed)")
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
