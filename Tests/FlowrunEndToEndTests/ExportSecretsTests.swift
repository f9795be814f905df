import Foundation
import Testing

/// SPEC §11 for `flowrun export --to argo`: a declared secret's value is
/// never written into the manifest. An `env:` secret (and one flowrun takes
/// from its caller) reaches the pods through `valueFrom.secretKeyRef`; a
/// secret var, which could only be a parameter written out, is refused.
@Suite struct ExportSecretsTests {
    static let workflow = """
        vars: { suffix: w0rd }
        env: { DB_PASSWORD: "db-Pa55-${{ vars.suffix }}", PLAIN: plain-value }
        secrets: [DB_PASSWORD, CALLER_SECRET, API_KEY]
        tasks:
          migrate:
            run: ./migrate --password "$DB_PASSWORD"
          call:
            env: { API_KEY: literal-key-123 }
            run: curl -H "Authorization=$API_KEY" https://example.com
        """

    @Test func secretsAreKubernetesSecretReferencesNeverValues() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(Self.workflow, to: "deploy.yaml")
        let run = try FlowrunBinary.run(["export", file, "--to", "argo"], environment: ["CALLER_SECRET": "caller-S3cret-x"])
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        for value in ["db-Pa55", "literal-key-123", "caller-S3cret-x"] {
            #expect(!run.stdout.contains(value), "the manifest holds \(value)")
        }
        #expect(run.stdout.contains("PLAIN=") && run.stdout.contains("plain-value"), "a value that is no secret is still set")
        let documents = try ArgoManifest.documents(run.stdout)
        let spec = try #require(documents.first?["spec"] as? [String: Any])
        let templates = try #require(spec["templates"] as? [[String: Any]])
        func environment(_ name: String) -> [[String: Any]] {
            let template = templates.first { $0["name"] as? String == name }
            return (template?["script"] as? [String: Any])?["env"] as? [[String: Any]] ?? []
        }
        func reference(_ name: String, in template: String) -> [String: Any]? {
            let entry = environment(template).first { $0["name"] as? String == name }
            return (entry?["valueFrom"] as? [String: Any])?["secretKeyRef"] as? [String: Any]
        }
        for (template, names) in [("migrate", ["DB_PASSWORD", "CALLER_SECRET"]), ("call", ["DB_PASSWORD", "API_KEY", "CALLER_SECRET"])] {
            for name in names {
                let found = reference(name, in: template)
                #expect(found?["name"] as? String == "deploy-secrets" && found?["key"] as? String == name, "\(template): \(name): \(environment(template))")
            }
        }
        #expect(reference("API_KEY", in: "migrate") == nil, "a task's own env: secret is that task's only")
        #expect(reference("CALLER_SECRET", in: "migrate")?["optional"] as? Bool == true)
        #expect(reference("DB_PASSWORD", in: "migrate")?["optional"] == nil)
        // Not set again by the script (which would need the value).
        #expect(!run.stdout.contains("DB_PASSWORD=") && !run.stdout.contains("API_KEY="), "\(run.stdout)")
        #expect(run.diagnostics.contains("\(file):3:11: warning: secret 'DB_PASSWORD' is not written into the manifest: pods read it from the Kubernetes Secret 'deploy-secrets'; create it before submitting: kubectl create secret generic deploy-secrets --from-literal=DB_PASSWORD=…"), "\(run.diagnostics)")
        try SchemaValidator.validate(documents.filter { $0["kind"] as? String == "Workflow" }, label: "secrets")
    }

    @Test func aSecretVarIsRefusedAtItsLineWithTheFix() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("""
            vars:
              token: s3cret-token-value
            secrets: [token]
            tasks:
              push: { run: "./push --token ${{ vars.token }}" }
            """, to: "push.yaml")
        let run = try FlowrunBinary.run(["export", file, "--to", "argo"])
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stdout.isEmpty && !run.stderr.contains("s3cret-token-value"), "\(run)")
        #expect(run.diagnostics == [
            "\(file):2:3: error: cannot export to Argo: var 'token' is a secret, and a var becomes a workflow parameter whose value the manifest would show; "
                + "set it under env: instead (pods then read it from the Kubernetes Secret 'push-secrets') and read $token in scripts",
        ], "\(run.diagnostics)")
    }
}
