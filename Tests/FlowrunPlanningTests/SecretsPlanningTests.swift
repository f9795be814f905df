@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

/// `secrets:` (SPEC §11): which names are accepted, which values are
/// masked, and what the plan shows of them; and the http limits the plan
/// carries when a task sets none.
@Suite struct SecretsPlanningTests {
    @Test func secretsNameVarsEnvEntriesOrEnvironmentNames() throws {
        let workflow = try workflow("""
            vars: { token: abcd-1234 }
            env: { DB_PASSWORD: "pw-${{ vars.token }}" }
            secrets: [token, DB_PASSWORD, FROM_CALLER]
            tasks: { a: { run: "true" } }
            """)
        #expect(workflow.secrets.map(\.value) == ["token", "DB_PASSWORD", "FROM_CALLER"])
    }

    @Test func aNameThatCannotBeAVariableNamesTheNearestOne() {
        let source = MarkedText("""
            vars: { api-token: abcd-1234 }
            secrets: [¹api-tokn, ²api-token, ³api-token]
            tasks: { a: { run: "true" } }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): error: secret 'api-tokn' is neither a variable under vars nor an environment variable name (did you mean 'api-token'?)",
            "\(source[3]): error: secret 'api-token' is listed twice",
        ])
    }

    @Test func theKeyIsKnownToDidYouMean() {
        #expect(diagnostics("""
            secret: [TOKEN]
            tasks: { a: { run: "true" } }
            """) == ["test.yaml:1:1: error: unknown key 'secret' in the workflow (did you mean 'secrets'?)"])
    }

    @Test func valuesComeFromVarsOverridesEnvEntriesAndTheCaller() throws {
        var options = PlanOptions()
        options.variables = [("token", "from-the-command-line")]
        let workflow = try workflow("""
            vars: { token: in-the-file, plain: not-secret }
            env: { DB_PASSWORD: "pw-${{ vars.token }}-${{ env.SUFFIX }}" }
            secrets: [token, DB_PASSWORD, FROM_CALLER, UNSET_ONE]
            tasks: { a: { run: "true" } }
            """)
        let caller = ["SUFFIX": "zz", "FROM_CALLER": "caller-value"]
        var planned = workflow
        planned.vars[0].value = "from-the-command-line"
        let values = try Planner.secretValues(of: planned) { caller[$0] }
        #expect(values == ["from-the-command-line", "pw-from-the-command-line-zz", "caller-value"])
        let plan = try Planner.plan(workflow, options: options)
        let masker = try #require(plan.secretMasker)
        #expect(masker.mask("from-the-command-line in-the-file not-secret") == "*** in-the-file not-secret")
    }

    @Test func aSecretShorterThanFourBytesIsRefused() throws {
        let source = MarkedText("""
            vars: { pin: "123" }
            secrets: [¹pin]
            tasks: { a: { run: "true" } }
            """)
        let parsed = try workflow(source.text)
        do {
            _ = try Planner.plan(parsed)
            Issue.record("a 3-byte secret should be refused")
        } catch {
            #expect(error.message == "\(source[1]): secret 'pin' is 3 bytes long; flowrun masks secrets of 4 bytes or more "
                + "(a shorter one would turn every word holding it into ***, and protects nothing)")
        }
    }

    @Test func thePlanShowsSecretsAsStars() throws {
        var options = PlanOptions()
        options.variables = [("token", "cli-t0ken-value")]
        let plan = try Planner.plan(try workflow("""
            vars: { token: file-t0ken-value, user: bob }
            env: { API_KEY: "literal-api-key" }
            secrets: [token, API_KEY]
            tasks:
              a: { run: "echo cli-t0ken-value" }
              h: { http: { url: "https://bob:${{ vars.token }}@example.com/p?token=${{ vars.token }}&x=1" } }
            """), options: options)
        for text in [plan.text, plan.json] {
            #expect(!text.contains("t0ken-value"), "\(text)")
            #expect(!text.contains("literal-api-key"), "\(text)")
            #expect(text.contains("https://***:***@example.com/p?token=***&x=***"), "\(text)")
        }
        #expect(plan.text.contains("vars: token=***, user=bob"), "\(plan.text)")
        #expect(plan.text.contains("env: API_KEY=***"), "\(plan.text)")
    }

    @Test func httpTasksHaveADefaultWholeRequestLimit() throws {
        let plan = try Planner.plan(try workflow("""
            tasks:
              slow: { http: { url: "http://example.com/" } }
              own: { http: { url: "http://example.com/" }, timeout: 2s }
              script: { run: "true" }
            """))
        let timeouts = Dictionary(uniqueKeysWithValues: plan.steps.map { ($0.name, $0.timers.timeout) })
        #expect(timeouts["slow"] == .seconds(300))
        #expect(timeouts["own"] == .seconds(2))
        #expect(timeouts["script"] == .some(nil))
        #expect(plan.text.contains("timeout 5m per attempt"))
        #expect(HTTPRequest.connectTimeout == .seconds(30))
    }

    @Test(arguments: [
        ("https://user:pa55@host.example/p/a?token=abc&x=&y#frag", "https://***:***@host.example/p/a?token=***&x=&***#frag"),
        ("http://user@host/", "http://***@host/"),
        ("http://host:8080/path", "http://host:8080/path"),
        ("http://host/p?a=1&b=2", "http://host/p?a=***&b=***"),
        ("http://u:p@host?q=1", "http://***:***@host?q=***"),
    ])
    func urlsAreShownWithoutCredentialsOrQueryValues(url: String, shown: String) {
        #expect(URLRedaction.redact(url) == shown)
    }
}

extension SecretsPlanningTests {
    @Test func aSecretSetOnlyByATaskEnvIsSaidToBeUnmasked() {
        let source = MarkedText("""
            secrets: [TOKEN]
            tasks:
              a: { run: "true", env: { ¹TOKEN: "${{ tasks.b.stdout }}" }, needs: b }
              b: { run: "echo x" }
            """)
        #expect(diagnostics(source.text) == [
            "\(source[1]): warning: 'TOKEN' is a secret, but this value is set when the task starts and is not masked; "
                + "set it under the workflow's env: or vars: to have it masked",
        ])
    }

    @Test func theWholeRequestLimitIsNamedWhenItIsTheDefault() throws {
        let tasks = try workflow("""
            tasks:
              slow: { http: { url: "http://example.com/" } }
              own: { http: { url: "http://example.com/" }, timeout: 2s }
            """).tasks
        #expect(tasks[0].timeoutNote == " (the whole-request limit of http tasks; set timeout: to change it)")
        #expect(tasks[1].timeoutNote == "")
    }
}
