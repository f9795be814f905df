import Foundation
import Testing

extension RunEndToEndParallel {
    /// `dotenv:` (SPEC §15): `KEY=VALUE` files read as Docker Compose and
    /// just read them; later files win; the caller's environment and `env:`
    /// win over them; a secret can come from one; a missing file is an error
    /// unless `required: false`.
    @Suite struct DotenvTests {
        static let workflow = """
            dotenv: [.env, { path: .env.local, required: false }]
            secrets: [TOKEN]
            env: { FROM_ENV_KEY: set-by-env }
            tasks:
              show:
                run: |
                  printf '%s\\n' "$PLAIN" "$QUOTED" "$SINGLE" "$LOCAL" "$CALLER" "$FROM_ENV_KEY" "$TOKEN" > "$SANDBOX/values"
                  echo "token is $TOKEN"
            """

        static let dotenv = """
            # a comment
            export PLAIN=plain value # trailing comment
            QUOTED="two\\nlines"
            SINGLE='$HOME stays'
            LOCAL=from .env
            CALLER=from .env
            FROM_ENV_KEY=from .env
            TOKEN=s3cr3t-from-dotenv

            """

        @Test func theFilesFillInTheEnvironmentUnderTheCallersAndEnv() throws {
            let sandbox = try RunSandbox()
            try sandbox.write(workflow: Self.dotenv, to: ".env")
            try sandbox.write(workflow: "LOCAL=from .env.local\n", to: ".env.local")
            let run = try sandbox.run(Self.workflow, ["--stream"], environment: ["CALLER": "from the caller"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("values") == [
                "plain value", "two", "lines", "$HOME stays", "from .env.local", "from the caller", "set-by-env", "s3cr3t-from-dotenv",
            ], "\(run)")
            #expect(run.stdout.contains("show | token is ***"), "\(run)")
            #expect(!run.stdout.contains("s3cr3t"), "\(run)")
        }

        @Test func aMissingFileOrABadLineIsAnErrorWhereItIs() throws {
            let sandbox = try RunSandbox()
            let missing = try sandbox.run(Self.workflow)
            #expect(missing.exitStatus == 2, "\(missing)")
            #expect(missing.stderr.contains("workflow.yaml:1:10: error: dotenv file '.env' cannot be read"), "\(missing)")
            #expect(missing.stderr.contains("required: false"), "\(missing)")
            try sandbox.write(workflow: "GOOD=1\nnot a pair\n", to: ".env")
            let bad = try sandbox.run(Self.workflow)
            #expect(bad.exitStatus == 2, "\(bad)")
            #expect(bad.stderr.contains("/.env:2:1: error: expected KEY=VALUE in a dotenv file, found 'not a pair'"), "\(bad)")
        }
    }
}
