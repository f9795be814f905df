import Foundation
import Testing

/// The peers' words (SPEC §10, issue 23 item 6): go-task's, just's, make's,
/// GitHub Actions', Dagu's and Argo's keys point to flowrun's, with the unit
/// where units differ; a field that does not evaluate `${{ }}` says so.
@Suite struct PeerWordsTests {
    private static func validate(_ text: String) throws -> (file: String, run: FlowrunRun, directory: TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let file = try directory.write(text, to: "ported.yaml")
        return (file, try FlowrunBinary.run(["validate", file]), directory)
    }

    /// Every peer word of SPEC §10, where a port puts it, and flowrun's word.
    @Test(arguments: [
        // A task's keys.
        ("deps: [a]", "needs"), ("depends: [a]", "needs"), ("depends_on: [a]", "needs"), ("dependencies: [a]", "needs"),
        ("dir: src", "cwd"), ("working-directory: src", "cwd"),
        ("retry: 2", "retries: 2"), ("retryPolicy: {limit: 3}", "retries: 3"), ("retryStrategy: {limit: 4}", "retries: 4"),
        ("ignore_error: true", "continue_on_error"), ("continueOn: {failure: true}", "continue_on_error"),
        ("timeout-minutes: 5", "timeout: 5m"), ("timeoutSec: 30", "timeout: 30s"),
    ])
    func aPeerTaskKeyPointsToFlowrunsKey(line: String, meant: String) throws {
        let checked = try Self.validate("tasks:\n  a: {run: \"true\"}\n  b:\n    run: \"true\"\n    \(line)\n")
        let key = String(line.prefix { $0 != ":" })
        #expect(checked.run.exitStatus == 2, "\(checked.run)")
        #expect(checked.run.stderr.contains(
            "\(checked.file):5:5: error: unknown key '\(key)' in task 'b' (did you mean '\(meant)'? flowrun's word for it)"), "\(checked.run)")
    }

    @Test(arguments: ["cmds", "cmd", "script", "command"])
    func aPeerScriptKeyPointsToRun(key: String) throws {
        let checked = try Self.validate("tasks:\n  b:\n    \(key): echo hi\n")
        #expect(checked.run.exitStatus == 2, "\(checked.run)")
        #expect(checked.run.stderr.contains(
            "\(checked.file):3:5: error: unknown key '\(key)' in task 'b' (did you mean 'run'? flowrun's word for it)"), "\(checked.run)")
        #expect(!checked.run.stderr.contains("needs exactly one of"), "one error, not two\n\(checked.run)")
    }

    @Test(arguments: [
        ("parallelism: 2", "concurrency"), ("maxConcurrent: 2", "concurrency"),
        ("for: [a]", "foreach"), ("withItems: [a]", "foreach"), ("withParam: x", "foreach"), ("parallel: [a]", "foreach"),
    ])
    func aPeerGroupKeyPointsToFlowrunsKey(line: String, meant: String) throws {
        let checked = try Self.validate("groups:\n  g:\n    \(line)\n    tasks: {a: {run: \"true\"}}\n")
        let key = String(line.prefix { $0 != ":" })
        #expect(checked.run.stderr.contains(
            "\(checked.file):3:5: error: unknown key '\(key)' in group 'g' (did you mean '\(meant)'? flowrun's word for it)"), "\(checked.run)")
    }

    /// `strategy:` (GitHub's matrix) on a group points to `matrix`, which
    /// lives on a group; on a task, to where it belongs.
    @Test func strategyPointsToMatrix() throws {
        let checked = try Self.validate("tasks:\n  b:\n    run: \"true\"\n    strategy: {matrix: {os: [linux]}}\n")
        #expect(checked.run.stderr.contains(
            "\(checked.file):4:5: error: unknown key 'strategy' in task 'b' (flowrun's word for it is a group's 'matrix:' with 'task:' (a fan-out is a group))"),
            "\(checked.run)")
    }

    @Test(arguments: ["handlerOn", "onExit", "defer"])
    func aPeerCleanupKeyPointsToFinally(key: String) throws {
        let top = try Self.validate("\(key): {cleanup: {run: \"true\"}}\ntasks:\n  a: {run: \"true\"}\n")
        #expect(top.run.stderr.contains("\(top.file):1:1: error: unknown key '\(key)' in the workflow (did you mean 'finally'? flowrun's word for it)"), "\(top.run)")
        let inTask = try Self.validate("tasks:\n  a:\n    run: \"true\"\n    \(key): rm -rf tmp\n")
        #expect(inTask.run.stderr.contains("\(inTask.file):4:5: error: unknown key '\(key)' in task 'a' (flowrun's word for it is the top-level 'finally:'"), "\(inTask.run)")
    }

    @Test func parallelismAtTheTopPointsToMaxParallel() throws {
        let checked = try Self.validate("parallelism: 4\ntasks:\n  a: {run: \"true\"}\n")
        #expect(checked.run.stderr.contains("\(checked.file):1:1: error: unknown key 'parallelism' in the workflow (did you mean 'max_parallel'? flowrun's word for it)"), "\(checked.run)")
    }

    /// GitHub's status checks say which `when:` means the same.
    @Test(arguments: [("always()", "always"), ("failure()", "failure"), ("success()", "success"), ("${{ always() }}", "always")])
    func ifStatusCheckPointsToWhen(condition: String, when: String) throws {
        let checked = try Self.validate("tasks:\n  a: {run: \"true\"}\n  b:\n    run: \"true\"\n    needs: a\n    if: \(condition)\n")
        #expect(checked.run.exitStatus == 2, "\(checked.run)")
        let shown = condition.hasPrefix("${{") ? "always()" : condition
        #expect(checked.run.stderr.contains(
            "\(checked.file):6:9: error: if: \(shown) is GitHub Actions' status check; flowrun says it with 'when:' (did you mean 'when: \(when)'?)"),
            "\(checked.run)")
        #expect(!checked.run.stderr.contains("unknown value"), "\(checked.run)")
    }

    /// `semaphores: ["w${{ item }}"]` used to say "declare it under semaphores".
    @Test func anExpressionInAFieldThatDoesNotEvaluateSaysSo() throws {
        let checked = try Self.validate("""
            semaphores: {w0: 1, w1: 1}
            vars: {n: 2}
            groups:
              workers:
                foreach: [0, 1]
                task:
                  run: "true"
                  semaphores: ["w${{ item }}"]
                  needs: ["${{ vars.n }}"]
                  retries: ${{ vars.n }}
            """)
        #expect(checked.run.exitStatus == 2, "\(checked.run)")
        let stderr = checked.run.stderr
        #expect(!stderr.contains("declare it under"), "\(checked.run)")
        // A semaphore name evaluates now (a pool of a family or a declared one, SPEC §15).
        #expect(!stderr.contains("semaphores is read as written"), "\(checked.run)")
        #expect(stderr.contains("\(checked.file):9:15: error: needs is read as written and does not evaluate ${{ }}"), "\(checked.run)")
        #expect(stderr.contains("\(checked.file):10:16: error: retries is read as written and does not evaluate ${{ }}"), "\(checked.run)")
    }

    @Test func anExpressionInANameSaysHowToNameMembers() throws {
        let checked = try Self.validate("tasks:\n  \"build-${{ vars.os }}\": {run: \"true\"}\n")
        #expect(checked.run.stderr.contains(
            "\(checked.file):2:3: error: a name in tasks is read as written and does not evaluate ${{ }}; to name fan-out members from their items, give the group's 'task:' a 'name:'"),
            "\(checked.run)")
    }

    /// A near miss that is no peer's word keeps the ordinary did-you-mean.
    @Test func anOrdinaryTypoKeepsTheNearestKey() throws {
        let checked = try Self.validate("tasks:\n  a:\n    run: \"true\"\n    tiemout: 5s\n")
        #expect(checked.run.stderr.contains("unknown key 'tiemout' in task 'a' (did you mean 'timeout'?)\n"), "\(checked.run)")
    }
}
