@testable import FlowrunModel
@testable import FlowrunLoading
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

@Suite struct ValidationTests {
    @Test func unknownKeyNamesTheNearestKnownOne() {
        #expect(diagnostics("""
            tasks:
              build: { run: make, tiemout: 5s }
            """) == [
            "test.yaml:2:23: error: unknown key 'tiemout' in task 'build' (did you mean 'timeout'?)",
        ])
    }

    @Test func unknownTopLevelKeyWithoutCloseMatchHasNoSuggestion() {
        let source = MarkedText("""
            ¹colour: red
            tasks: { a: { run: "true" } }
            """)
        #expect(diagnostics(source.text) == ["\(source[1]): error: unknown key 'colour' in the workflow"])
    }

    @Test func duplicateKeyNamesBothPlaces() {
        let source = MarkedText("""
            tasks:
              build: { run: make }
              ¹build: { run: make all }
            """)
        #expect(diagnostics(source.text) == ["\(source[1]): error: duplicate key 'build' (first defined at 2:3)"])
    }

    @Test func namesShareOneNamespaceAcrossSections() {
        let source = MarkedText("""
            tasks:
              fetch: { run: "true" }
            groups:
              ¹fetch:
                tasks: { one: { run: "true" } }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: the name 'fetch' is already used by the task at 2:3; tasks, groups and joins share one namespace",
        ])
    }

    @Test func cycleIsReportedWithItsPath() {
        let source = MarkedText("""
            tasks:
              ¹a: { run: "true", needs: c }
              b: { run: "true", needs: a }
              c: { run: "true", needs: b }
            """)
        #expect(diagnostics(source.text) == ["\(source[1]): error: dependency cycle: a -> c -> b -> a"])
    }

    @Test func cycleThroughAGroupAndAJoin() {
        let source = MarkedText("""
            tasks:
              ¹prepare: { run: "true", needs: done }
            groups:
              work:
                needs: [prepare]
                tasks: { one: { run: "true" } }
            joins:
              done: { wait: [work] }
            """)
        #expect(diagnostics(source.text) == ["\(source[1]): error: dependency cycle: prepare -> done -> work -> one -> prepare"])
    }

    @Test func unknownNeedSuggestsTheNearestName() {
        let source = MarkedText("""
            tasks:
              build: { run: make }
              test: { run: make test, needs: [¹biuld] }
            """)
        #expect(diagnostics(source.text) == ["\(source[1]): error: unknown name 'biuld' in needs (did you mean 'build'?)"])
    }

    @Test func expressionMayReadOnlyTransitiveNeeds() {
        let source = MarkedText("""
            tasks:
              version: { run: "echo 1.2.3" }
              build: { run: make, needs: version }
              package: { run: "tar ${{ tasks.version.stdout }}", needs: build }
              publish: { run: "echo ${{ ¹tasks.package.stdout }}" }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: 'tasks.package.stdout' reads 'package', which is not among the needs of 'publish': add it to needs (directly or through another need)",
        ])
    }

    @Test func operandsSplitDottedNamesAtKnownNames() throws {
        let workflow = try workflow("""
            tasks:
              fetch.v2: { run: "echo hi" }
              use: { run: "echo ${{ tasks.fetch.v2.outputs.path }}", needs: fetch.v2 }
            """)
        guard case .run(let script) = workflow.tasks[1].action else { Issue.record("not a run task"); return }
        #expect(script.operands.map(\.path) == [.task("fetch.v2", .output("path"))])
    }

    @Test func operandOfTheWrongKindSaysHowToReadIt() {
        let source = MarkedText("""
            groups:
              g: { tasks: { one: { run: "true" } } }
            tasks:
              after: { run: "echo ${{ ¹tasks.g.status }}", needs: g }
            """)
        #expect(diagnostics(source.text) == ["\(source[1]): error: 'g' is a group, not a task; read it as groups.g.…"])
    }

    @Test func groupMembersAreSettledWhenTheGroupIs() throws {
        _ = try workflow("""
            groups:
              g: { tasks: { one: { run: "echo 1" } } }
            tasks:
              after: { run: "echo ${{ tasks.one.stdout }} ${{ groups.g.results }}", needs: g }
            """)
    }

    @Test func joinMembersAreSettledWhenTheJoinIs() throws {
        _ = try workflow("""
            tasks:
              a: { sleep: 1s }
              b: { sleep: 2s }
              after: { run: "echo ${{ tasks.a.status }} ${{ joins.both.timed_out }}", needs: both }
            joins:
              both: { wait: [a, b], need: any, timeout: 2s }
            """)
    }

    @Test func joinThatCanNeverBeMet() {
        let source = MarkedText("""
            tasks:
              a: { sleep: 1s }
              b: { sleep: 1s }
            joins:
              j: { wait: [a, b], need: ¹3 }
            """)
        #expect(diagnostics(source.text) == ["\(source[1]): error: join 'j' needs 3 members to succeed but waits for only 2"])
    }

    @Test func joinReportEntriesMustNameMembersAndFields() {
        let source = MarkedText("""
            tasks:
              a: { sleep: 1s }
            groups:
              g: { tasks: { one: { sleep: 1s } } }
            joins:
              j: { wait: [a, g], report: [a.stdout, ¹a.stdot, ²g.stdout, ³z.stdout, g.results] }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: 'a.stdot': a task offers stdout, status, exit_code, duration or outputs.KEY",
            "\(source[2]): error: 'g.stdout': a group offers status or results",
            "\(source[3]): error: 'z.stdout' does not start with a member of this join (a, g)",
        ])
    }

    @Test func semaphoreWeightAboveCapacityAndUnknownSemaphore() {
        let source = MarkedText("""
            semaphores: { db: 1, network: 3 }
            tasks:
              restore: { run: "true", semaphores: { ¹db: 2, ²netwrk: 1 } }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: 'restore' takes 2 of semaphore 'db', which holds only 1: it could never run",
            "\(source[2]): error: unknown semaphore 'netwrk' (did you mean 'network'?); declare it under the top-level 'semaphores:'",
        ])
    }

    @Test func limitsBelowOne() {
        let source = MarkedText("""
            max_parallel: ¹0
            semaphores: { db: ²0 }
            groups:
              g:
                concurrency: ³0
                tasks: { one: { sleep: 1s } }
            joins:
              j: { wait: [g], need: ⁴0 }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: max_parallel must be at least 1, found 0",
            "\(source[2]): error: the capacity of semaphore 'db' must be at least 1, found 0",
            "\(source[3]): error: concurrency must be at least 1, found 0",
            "\(source[4]): error: need must be at least 1, found 0",
        ])
    }

    @Test func childTimeoutLongerThanItsGroupOrTheRunIsAWarning() {
        let source = MarkedText("""
            timeout: 1m
            tasks:
              slow: { sleep: 1s, timeout: ¹2m }
            groups:
              g:
                timeout: 10s
                tasks: { one: { sleep: 1s, timeout: ²30s } }
            """)
        let result = WorkflowValidator.validate(bytes: Array(source.text.utf8), file: "test.yaml")
        #expect(result.diagnostics.map(\.description) == [
            "\(source[1]): warning: this timeout (2m) is longer than the run's timeout (1m), which fires first",
            "\(source[2]): warning: this timeout (30s) is longer than the timeout of group 'g' (10s), which fires first",
        ])
        #expect(result.workflow != nil, "warnings alone keep a workflow valid")
    }

    @Test func aTaskHasExactlyOneAction() {
        let source = MarkedText("""
            tasks:
              ¹nothing: { timeout: 1s }
              both: { sleep: 1s, ²run: "true" }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: task 'nothing' needs exactly one of 'run', 'sleep' or 'http'",
            "\(source[2]): error: task 'both' already has 'sleep'; a task has exactly one of 'run', 'sleep' or 'http'",
        ])
    }

    @Test func booleansAndNumbersFollowTheCoreSchema() {
        let source = MarkedText("""
            fail_fast: ¹yes
            max_parallel: ²"8"
            tasks:
              a: { run: "true", retries: ³-1, backoff: ⁴0.5, continue_on_error: ⁵on }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: expected true or false for fail_fast, found 'yes'",
            "\(source[2]): error: expected a whole number for max_parallel, found '8'",
            "\(source[3]): error: retries must be at least 0, found -1",
            "\(source[4]): error: backoff must be at least 1, found 0.5",
            "\(source[5]): error: expected true or false for continue_on_error, found 'on'",
        ])
    }

    @Test func itemAndIndexOnlyInsideAFanOutTemplate() throws {
        let source = MarkedText("""
            tasks:
              a: { run: "echo ${{ ¹item }}" }
            groups:
              g:
                foreach: [x, y]
                task: { name: "g-${{ index }}", run: "echo ${{ item }} ${{ index }}" }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: 'item' exists only in a fan-out template (a group's 'task:' with 'foreach:')",
        ])
    }

    @Test func finallyTasksNeedOnlyFinallyTasksAndReadAnything() {
        let source = MarkedText("""
            tasks:
              build: { run: make, needs: [¹cleanup] }
            finally:
              report: { run: "echo ${{ tasks.build.status }} ${{ ²tasks.cleanup.status }}" }
              cleanup: { run: "true", needs: [³build] }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: 'cleanup' is a finally task, which runs after everything else; nothing outside finally can need it",
            "\(source[2]): error: 'tasks.cleanup.status' reads 'cleanup', which is not among the needs of 'report': add it to needs (directly or through another need)",
            "\(source[3]): error: a finally task may only need other finally tasks; 'build' has settled before finally starts anyway",
        ])
    }

    @Test func memberCannotNeedItsOwnGroup() {
        let source = MarkedText("""
            groups:
              g:
                tasks:
                  one: { run: "true", needs: [¹g] }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: 'one' is a member of group 'g' and cannot need it: the group finishes only after its members",
        ])
    }

    @Test func expressionSyntaxErrorsPointIntoTheExpression() {
        let source = MarkedText("""
            vars: { x: 1 }
            tasks:
              a: { run: "echo ${{ tasks.b.stdout == ¹}}", needs: b }
              b: { run: "echo ${{ vars.x ²= 'y' }}" }
              c: { run: "echo ${{ ³tasks.b.stdot }}", needs: b }
              d: { run: "echo ⁴${{ vars.x" }
              e: { sleep: 1s, if: "tasks.c.status == ⁵'failed", needs: c }
              f: { run: "echo ${{ vars.x ⁶vars.x }}" }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: expected a value, found the end of the expression",
            "\(source[2]): error: '=' is not an operator; did you mean '=='?",
            "\(source[3]): error: 'tasks.b.stdot': a task offers stdout, status, exit_code, duration or outputs.KEY (did you mean 'stdout'?)",
            "\(source[4]): error: '${{' is not closed by '}}'",
            "\(source[5]): error: in if: unterminated string (missing ')",
            "\(source[6]): error: unexpected 'vars.x' after a complete expression",
        ])
    }

    @Test func expressionInsideABlockScalarIsLocatedOnItsLine() {
        let source = MarkedText("""
            tasks:
              a:
                run: |
                  echo start
                  echo ${{ ¹tasks.missing.stdout }}
            """)
        #expect(diagnostics(source.text) == ["\(source[1]): error: unknown task 'missing' in 'tasks.missing.stdout'"])
    }

    @Test func variablesMustBeDeclared() {
        let source = MarkedText("""
            vars: { bucket: nightly }
            tasks:
              a: { run: "echo ${{ ¹vars.buckt }}" }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: unknown variable 'vars.buckt' (did you mean 'bucket'?); declare it under 'vars:'",
        ])
    }

    @Test func everyProblemAtOnceSortedByPosition() {
        let result = diagnostics("""
            tasks:
              z: { run: "true", needs: nope }
              a: { run: "true", tiemout: 1s }
            max_parallel: -1
            """)
        #expect(result == [
            "test.yaml:2:28: error: unknown name 'nope' in needs",
            "test.yaml:3:21: error: unknown key 'tiemout' in task 'a' (did you mean 'timeout'?)",
            "test.yaml:4:15: error: max_parallel must be at least 1, found -1",
        ])
    }

    @Test func emptyAndTasklessFiles() {
        #expect(diagnostics("") == ["test.yaml:1:1: error: the file is empty: a workflow needs at least one task under 'tasks:'"])
        #expect(diagnostics("# just a comment\n") == ["test.yaml:1:1: error: the file is empty: a workflow needs at least one task under 'tasks:'"])
        #expect(diagnostics("name: x\n") == ["test.yaml:1:1: error: the workflow has no tasks: add at least one under 'tasks:', a group or 'finally:'"])
        #expect(diagnostics("- a\n- b\n") == ["test.yaml:1:1: error: expected a mapping for the workflow, found a sequence"])
    }

    @Test func fanOutShapes() {
        let source = MarkedText("""
            groups:
              a: { ¹foreach: [1, 2] }
              b: { ²task: { run: "true" } }
              c: { foreach: { range: ³[5, 1] }, task: { run: "true" } }
              d: { foreach: ⁴just-text, task: { run: "true" } }
              e: { foreach: [1], task: { name: ⁵fixed, run: "true" } }
              ⁶f: { concurrency: 2 }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: group 'a' has foreach but no task: add 'task:' with the template each item runs",
            "\(source[2]): error: group 'b' has a task template but no foreach: add 'foreach:' with the items, or list members under 'tasks:'",
            "\(source[3]): error: the range [5, 1] ends before it starts",
            "\(source[4]): error: foreach takes a list, {range: [FIRST, LAST]} or a ${{ }} expression, found 'just-text'",
            "\(source[5]): error: a fan-out member name must use ${{ item }} or ${{ index }} so that each member's name is unique",
            "\(source[6]): error: group 'f' has no members: add 'tasks:' or 'foreach:' with 'task:'",
        ])
    }

    @Test func httpTasks() {
        let source = MarkedText("""
            tasks:
              a: { http: ¹{ method: GET } }
              b: { http: { url: ²ftp://x, method: ³FETCH, expect: ⁴700 } }
              c: { http: { url: "http://127.0.0.1:8080/health", headers: { Accept: text/plain }, expect: 204 } }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: http needs a 'url'",
            "\(source[2]): error: url must start with http:// or https://, found 'ftp://x'",
            "\(source[3]): error: unknown HTTP method 'FETCH'",
            "\(source[4]): error: expect must be an HTTP status between 100 and 599, found 700",
        ])
    }

    @Test func namesFollowThePattern() {
        let source = MarkedText("""
            tasks:
              ¹-bad: { run: "true" }
              ok.name-2_x: { run: "true" }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: '-bad' is not a valid name: use letters, digits, '_', '.' and '-', not starting with '.' or '-'",
        ])
    }

    /// A shell reads a quoted value as its text: no warning. Another
    /// interpreter gets one single-quoted shell word, so a quote before
    /// `${{` there still ends up in the text.
    @Test func quotingAnExpressionIsAWarningOnlyWhereNoShellReadsTheScript() {
        let source = MarkedText("""
            tasks:
              a: { run: "echo hi" }
              b: { run: "echo '${{ tasks.a.stdout }}' \\"${{ tasks.a.stdout }}\\"", needs: a }
              c: { run: "print('¹${{ tasks.a.stdout }}')", shell: [python3], needs: a }
              d: { run: "#!/bin/bash\\necho \\"${{ tasks.a.stdout }}\\"", needs: a }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): warning: this script is not read by a shell, and a value in it is inserted as one single-quoted shell word; the quote before ${{ becomes part of the text: read the value from env: instead",
        ])
    }

    @Test func mergeKeysAndAnchorsWork() throws {
        let workflow = try workflow("""
            tasks:
              a: &defaults { run: "true", timeout: 30s, retries: 2 }
              b: { <<: *defaults, retries: 0 }
              c: { <<: [*defaults] }
            """)
        #expect(workflow.tasks.map(\.retries) == [2, 0, 2])
        #expect(workflow.tasks.map { $0.timeout?.value } == [.seconds(30), .seconds(30), .seconds(30)])
    }

    /// Each static call of a template gets its own globs, whichever text
    /// its parameters made at the template's place: what a call's task
    /// holds is what its source says (before, the first call's split was
    /// reused for every call at that place).
    @Test func eachTemplateCallHasItsOwnFilledInGlobs() throws {
        let workflow = try workflow("""
            templates:
              cc:
                params: { dir: src, name: ~ }
                sources: ["${{ params.dir }}/${{ params.name }}.c", "include/*.h"]
                generates: ["build/${{ params.name }}.o"]
                run: cc -c ${{ params.dir }}/${{ params.name }}.c
            tasks:
              cc-a: { uses: cc, with: { name: a } }
              cc-b: { uses: cc, with: { name: b } }
            """)
        func texts(_ templates: [Template]) -> [String] {
            templates.map { template in
                template.segments.map { segment -> String in
                    if case .text(let text) = segment { return text }
                    return "${{ }}"
                }.joined()
            }
        }
        for task in workflow.tasks {
            let name = task.name.dropFirst(3)
            #expect(texts(task.sources) == ["src/\(name).c", "include/*.h"], "\(task.name)")
            #expect(task.sources.map(\.source) == ["src/\(name).c", "include/*.h"], "\(task.name)")
            #expect(texts(task.generates) == ["build/\(name).o"], "\(task.name)")
        }
    }
}

@Suite struct HostileExpressionTests {
    @Test func deeplyNestedExpressionsAreRefusedNotRecursedInto() {
        let parentheses = String(repeating: "(", count: 100_000)
        let result = diagnostics("tasks: { a: { run: \"${{ \(parentheses) }}\" } }")
        #expect(result.count == 1)
        #expect(result.first?.hasSuffix("error: the expression nests deeper than 64 levels") == true)
        let nots = String(repeating: "!", count: 100_000)
        #expect(diagnostics("tasks: { a: { run: \"${{ \(nots)true }}\" } }").first?.contains("nests deeper than 64 levels") == true)
    }

    @Test func longOperatorChainsAreRefused() {
        let chain = Array(repeating: "true", count: 10_000).joined(separator: " && ")
        let result = diagnostics("tasks: { a: { run: \"${{ \(chain) }}\" } }")
        #expect(result.count == 1)
        #expect(result.first?.hasSuffix("error: the expression has more than 256 operators") == true)
    }
}
