@testable import FlowrunModel
@testable import FlowrunPlanning
@testable import FlowrunExport
import FlowrunTestSupport
import Testing

/// One small workflow per concept of the Argo mapping (docs/CLUSTER.md),
/// each against its golden manifest in Tests/Fixtures/argo/.
@Suite struct ExportArgoMappingGoldenTests {
    @Test func taskBecomesAScriptTemplate() throws {
        try ArgoGolden.expect("task-script", """
            name: hello
            shell: /bin/bash
            env: { REGION: eu }
            tasks:
              greet:
                env: { WHO: world }
                cwd: /srv
                run: echo "hello $WHO from $REGION"
            """)
    }

    @Test func needsAndWhenBecomeDepends() throws {
        try ArgoGolden.expect("needs-when", """
            tasks:
              a: { run: "true" }
              b: { run: "false", continue_on_error: true }
              c: { needs: [a, b], run: echo c }
              on-failure: { needs: [a, b], when: failure, run: echo failed }
              always: { needs: [c, on-failure], when: always, run: echo done }
            """)
    }

    @Test func maxParallelTimeoutAndKillGraceGoToTheSpec() throws {
        try ArgoGolden.expect("spec-limits", """
            name: Limits_Demo
            max_parallel: 3
            timeout: 1h30m
            kill_grace: 2.5s
            tasks:
              only: { run: "true" }
            """)
    }

    @Test func groupBecomesANestedDAGWithParallelism() throws {
        try ArgoGolden.expect("group", """
            tasks:
              prepare: { run: echo "dir=/data" >> "$FLOWRUN_OUTPUT" }
            groups:
              work:
                needs: [prepare]
                concurrency: 2
                tasks:
                  first: { run: "dir=${{ tasks.prepare.outputs.dir }}; ls \\"$dir\\"" }
                  second: { needs: [first], run: echo "n=2" >> "$FLOWRUN_OUTPUT" }
              after:
                needs: [work]
                tasks:
                  read: { run: "echo ${{ tasks.second.outputs.n }}" }
            """)
    }

    @Test func semaphoresUseAConfigMapAndWeightsAreEmulated() throws {
        try ArgoGolden.expect("semaphores", """
            semaphores: { db: 1, network: 4 }
            tasks:
              load: { semaphores: [db, network], run: ./load }
              upload: { semaphores: { network: 3 }, run: ./upload }
            """)
    }

    @Test func timeoutsAndRetriesBecomeTimeoutAndRetryStrategy() throws {
        try ArgoGolden.expect("timeouts-retries", """
            tasks:
              flaky:
                timeout: 30s
                retries: 2
                retry_delay: 500ms
                backoff: 3
                run: ./flaky
              odd-backoff:
                retries: 1
                backoff: 1.5
                run: ./other
            """)
    }

    @Test func outputsAndValuesArePassedAsEnvironmentNeverPasted() throws {
        try ArgoGolden.expect("outputs-values", """
            vars: { channel: stable }
            tasks:
              version:
                run: |
                  echo "version=1.2.3" >> "$FLOWRUN_OUTPUT"
              use:
                needs: [version]
                env: { TAG: "v${{ tasks.version.outputs.version }}" }
                run: |
                  echo ${{ tasks.version.outputs.version }} $TAG ${{ vars.channel }}
                  echo ${{ tasks.version.stdout }} ${{ tasks.version.exit_code }} ${{ tasks.version.status }}
                  echo ${{ tasks.version.outputs.version == '1.2.3' }}
            """)
    }

    @Test func staticFanOutBecomesWithItems() throws {
        try ArgoGolden.expect("fan-out-static", """
            groups:
              regions:
                foreach: [eu, us]
                task:
                  name: deploy-${{ item }}
                  run: ./deploy ${{ item }} ${{ index }}
              numbers:
                foreach: { range: [1, 3] }
                task: { run: echo "$FLOWRUN_ITEM" }
            """)
    }

    @Test func dynamicFanOutBecomesWithParamOverANormalisedList() throws {
        try ArgoGolden.expect("fan-out-dynamic", """
            tasks:
              list: { run: printf 'a\\nb\\n' }
              summary: { needs: [each], run: "echo ${{ groups.each.results }} ${{ groups.each.status }}" }
            groups:
              each:
                needs: [list]
                concurrency: 2
                foreach: ${{ tasks.list.stdout }}
                task: { run: "echo ${{ item }}" }
            """)
    }

    @Test func finallyBecomesTheExitHandler() throws {
        try ArgoGolden.expect("finally", """
            tasks:
              build: { run: echo "artifact=app.tgz" >> "$FLOWRUN_OUTPUT" }
            finally:
              report: { run: "echo ${{ tasks.build.status }} ${{ tasks.build.outputs.artifact }}" }
              cleanup: { needs: [report], timeout: 30s, run: rm -rf /tmp/work }
            """)
    }

    @Test func ifBecomesWhen() throws {
        try ArgoGolden.expect("if-when", """
            vars: { mode: full, limit: 3 }
            tasks:
              probe: { run: echo "count=5" >> "$FLOWRUN_OUTPUT" }
              full:
                needs: [probe]
                if: ${{ vars.mode == 'full' && tasks.probe.outputs.count > 3 || !(tasks.probe.status == 'failed') }}
                run: echo full
            """)
    }

    @Test func joinBecomesACheckTask() throws {
        try ArgoGolden.expect("join", """
            tasks:
              a: { run: echo "path=a" >> "$FLOWRUN_OUTPUT" }
              b: { run: "true" }
              c: { run: "true" }
              after: { needs: [quorum], run: "echo ${{ joins.quorum.succeeded }} ${{ joins.quorum.timed_out }}" }
            joins:
              quorum:
                wait: [a, b, c]
                need: 2
                timeout: 10s
                on_timeout: fail
                report: [a.outputs.path, b.status]
            """)
    }

    @Test func sleepAndHTTPTasks() throws {
        try ArgoGolden.expect("sleep-http", """
            vars: { host: example.com }
            tasks:
              pause: { sleep: 2s }
              jitter: { sleep: 1s..3s }
              health:
                needs: [pause]
                http:
                  url: https://${{ vars.host }}/health
                  method: POST
                  headers: { Accept: application/json }
                  body: '{"from": "flowrun"}'
                  expect: 204
            """)
    }

    @Test func templateAndNamespaceOptions() throws {
        var options = ArgoExportOptions()
        options.asTemplate = true
        options.namespace = "ci"
        options.image = "busybox:1.36"
        try ArgoGolden.expect("workflow-template", """
            name: nightly
            description: "Nightly: sync"
            semaphores: { db: 1 }
            tasks:
              only: { semaphores: [db], run: "true" }
            """, options: options)
    }
}
