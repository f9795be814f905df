import Foundation
import Testing

extension RunEndToEnd {
    /// Issue 31, a tester's breaks of fan-out member naming: a long
    /// all-digit target against a range's `name:`, the dry run naming a
    /// member target by its index, `resume --from` not taking `test[0]`.
    @Suite struct MemberTargetNamingTests {
        /// Every member's name is an item and an index run together: any
        /// run of digits splits many ways, each to be tried.
        static let digitsRange = """
            groups:
              g:
                foreach: {range: [-5, 9999994]}
                task: {name: "${{ item }}${{ index }}", run: "true"}

            """

        /// A 130,000-digit target is refused at once: no member's name is
        /// longer than 15 bytes. Before, each digit read the whole prefix
        /// again, past `Int`'s end (9 s).
        @Test func aLongAllDigitTargetIsRefusedAtOnce() throws {
            let sandbox = try RunSandbox()
            let digits = String(repeating: "1", count: 130_000)
            // The same dry run without the target: what the file alone costs on this machine.
            let plain = try sandbox.run(Self.digitsRange, ["--dry-run"])
            #expect(plain.exitStatus == 0, "\(plain)")
            let run = try Self.withinHalfASecond(of: plain) { try sandbox.run(Self.digitsRange, ["--dry-run", digits], timeout: .seconds(20)) }
            #expect(run.exitStatus == 2, "\(run.stderr.prefix(300))")
            #expect(run.stderr.hasPrefix("flowrun: no task, group, join or fan-out member is named '1111"), "\(run.stderr.prefix(300))")
            #expect(run.wallSeconds < plain.wallSeconds + 0.5, "\(run.wallSeconds) s against \(plain.wallSeconds) s")
            // What the lookup still finds: item 0 is index 5 (the range starts at -5), item 9999994 the last.
            // (A name starting with `-` cannot follow `--` any more: the words after it are `${{ args }}`.)
            let zero = try sandbox.run(Self.digitsRange, ["--dry-run", "05"])
            #expect(zero.exitStatus == 0 && zero.stdout.contains("member 05 (item 0) only"), "\(zero)")
            let last = try sandbox.run(Self.digitsRange, ["--dry-run", "99999949999999"])
            #expect(last.exitStatus == 0 && last.stdout.contains("member 99999949999999 (item 9999994) only"), "\(last)")
        }

        /// The same name in `default:` is an error at its line, as fast.
        /// Before, 300,000 digits had the dry run still running after 300 s.
        @Test func aLongAllDigitDefaultIsAnErrorAtOnce() throws {
            let sandbox = try RunSandbox()
            let digits = String(repeating: "1", count: 300_000)
            let plain = try sandbox.run(Self.digitsRange, ["--dry-run"])
            #expect(plain.exitStatus == 0, "\(plain)")
            let run = try Self.withinHalfASecond(of: plain) { try sandbox.run(Self.digitsRange + "default: [\"\(digits)\"]\n", ["--dry-run"], timeout: .seconds(20)) }
            #expect(run.exitStatus == 2, "\(run.stderr.prefix(300))")
            #expect(run.stderr.contains("workflow.yaml:5:11: error: unknown name '1111"), "\(run.stderr.prefix(300))")
            #expect(run.stderr.contains("in default: no task, group, join or fan-out member has it"), "\(run.stderr.suffix(300))")
            #expect(run.wallSeconds < plain.wallSeconds + 0.5, "\(run.wallSeconds) s against \(plain.wallSeconds) s")
        }

        /// `run` once, again (at most three times in all) while it took more
        /// than half a second past `plain`: a neighbour's burst on two shared
        /// cores can slow one run; the quadratic lookup this guards against
        /// (9 s, over 300 s) is slow every time.
        static func withinHalfASecond(of plain: FlowrunRun, _ run: () throws -> FlowrunRun) throws -> FlowrunRun {
            var last = try run()
            for _ in 1..<3 where last.wallSeconds >= plain.wallSeconds + 0.5 { last = try run() }
            return last
        }

        static let offsetRange = """
            groups:
              g:
                foreach: {range: [100, 200]}
                task: {run: "echo ${{ item }}"}
              m:
                foreach: {range: [1, 2000000]}
                task: {name: "m-${{ item }}", run: "echo ${{ item }}"}

            """

        /// The dry run names a member target as the run does: its name and
        /// its item. Before, `g[3]` showed as "item 3" (it is item 103) and
        /// `m-1999999` as "item 1999998" (its index).
        @Test(arguments: [("g[3]", "103"), ("m-1999999", "1999999"), ("m[4]", "5")])
        func theDryRunNamesAMemberTargetAsTheRunDoes(target: String, item: String) throws {
            let sandbox = try RunSandbox()
            let member = target == "m[4]" ? "m-5" : target
            let dryRun = try sandbox.run(Self.offsetRange, ["--dry-run", target])
            #expect(dryRun.exitStatus == 0, "\(dryRun)")
            #expect(dryRun.stdout.contains("targets:   member \(member) (item \(item)) only (named as targets)"), "\(dryRun)")
            let run = try sandbox.run(Self.offsetRange, [target, "--stream"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("\(member) | \(item)\n"), "\(run)")
        }

        /// A matrix member's targets: the dry run lists each by name and item.
        @Test func theDryRunNamesMatrixMemberTargetsByNameAndItem() throws {
            let sandbox = try RunSandbox()
            let dryRun = try sandbox.run(ResumeFromTargets.matrix, ["--dry-run", "test[0]", "test[os=mac,py=3.12]"])
            #expect(dryRun.exitStatus == 0, "\(dryRun)")
            #expect(dryRun.stdout.contains(
                "targets:   members test[os=linux,py=3.11] (item {os: linux, py: 3.11}), test[os=mac,py=3.12] (item {os: mac, py: 3.12}) only (named as targets)"),
                "\(dryRun)")
        }

        enum ResumeFromTargets {
            static let matrix = """
                groups:
                  test:
                    matrix: { os: [linux, mac], py: ["3.11", "3.12"] }
                    task:
                      run: echo ran >> "$SANDBOX/${{ item.os }}-${{ item.py }}.count"
                  shard:
                    foreach: {range: [100, 102]}
                    task:
                      name: s-${{ item }}
                      run: echo ran >> "$SANDBOX/${{ item }}.count"
                tasks:
                  after: { needs: [test, shard], run: 'echo ran >> "$SANDBOX/after.count"' }

                """
        }

        /// `resume --from` takes every name a run target takes (one lookup):
        /// `test[0]` as `test[os=linux,py=3.11]`, `shard[1]` as `s-101`.
        /// Before, only the long form and a member's own name were taken.
        @Test(arguments: [
            ("test[0]", "test[os=linux,py=3.11]", "linux-3.11"), ("test[os=linux,py=3.11]", "test[os=linux,py=3.11]", "linux-3.11"),
            ("shard[1]", "s-101", "101"), ("s-101", "s-101", "101"),
        ])
        func resumeFromTakesEveryNameARunTargetTakes(from: String, member: String, counter: String) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(ResumeFromTargets.matrix)
            #expect(run.exitStatus == 0, "\(run)")
            let target = try sandbox.run(ResumeFromTargets.matrix, ["--dry-run", from])
            #expect(target.exitStatus == 0, "a run target: \(target)")
            let resume = try FlowrunBinary.run(
                ["resume", "--log-dir", sandbox.logDirectory, "--output", "plain", "--from", from], in: sandbox.path, environment: sandbox.environment)
            #expect(resume.exitStatus == 0, "\(resume)")
            #expect(sandbox.lines("\(counter).count").count == 2, "\(resume)")
            #expect(sandbox.lines("mac-3.12.count").count == 1 && sandbox.lines("100.count").count == 1, "\(resume)")
            #expect(sandbox.lines("after.count").count == 2, "\(resume)")
            let new = try #require(try RunEndToEndParallel.ResumeTests.records(sandbox).last)
            #expect(new.names("task_started").sorted() == ["after", member], "\(new.overview)")
        }

        /// A name the run could not take is still refused, with a hint.
        @Test func resumeFromRefusesAMemberPastTheItems() throws {
            let sandbox = try RunSandbox()
            #expect(try sandbox.run(ResumeFromTargets.matrix).exitStatus == 0)
            let resume = try FlowrunBinary.run(
                ["resume", "--log-dir", sandbox.logDirectory, "--output", "plain", "--from", "test[4]"], in: sandbox.path, environment: sandbox.environment)
            #expect(resume.exitStatus == 2, "\(resume)")
            #expect(resume.stderr.contains("--from test[4]: no task, group, join or fan-out member of the run has that name"), "\(resume)")
            #expect(sandbox.lines("after.count").count == 1, "nothing ran again")
        }
    }
}
