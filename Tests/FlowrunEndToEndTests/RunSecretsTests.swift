import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// SPEC §11: a secret's value never shows in anything flowrun prints or
    /// writes, however a task prints it; tasks still receive the real value.
    /// And an `http:` task on a server that trickles bytes is stopped.
    @Suite struct RunSecretsTests {
        static let cliToken = "cli-T0ken-4711"
        static let dbPassword = "db-Pa55-w0rd"
        static let callerSecret = "caller-S3cret-x"
        static let urlPassword = "url-Pa55-word"
        static let multiLine = "ml-first-line-1\nml-second-line-2"
        /// What must never appear: each value, and each line of the multi-line one.
        static let forbidden = [cliToken, dbPassword, callerSecret, urlPassword, multiLine, "ml-first-line-1", "ml-second-line-2"]

        static let callerEnvironment = ["CALLER_SECRET": callerSecret, "MULTI_SECRET": multiLine]

        /// Every way a task can print a secret, in one workflow.
        static func workflow(serverURL: String) -> String {
            """
            vars: { token: in-the-file-only, suffix: w0rd, pw: "\(urlPassword)" }
            env: { DB_PASSWORD: "db-Pa55-${{ vars.suffix }}" }
            secrets: [token, pw, DB_PASSWORD, CALLER_SECRET, MULTI_SECRET]
            tasks:
              whole:
                run: |
                  echo whole ${{ vars.token }} "$DB_PASSWORD" "$CALLER_SECRET" ${{ vars.pw }}
              received:
                # What tasks receive keeps the real values.
                run: |
                  [ ${{ vars.token }} = \(cliToken) ] && [ "$DB_PASSWORD" = \(dbPassword) ] && [ "$CALLER_SECRET" = \(callerSecret) ]
              split:
                run: |
                  printf 'caller-S3'; sleep 0.2; printf 'cret-x and more\\n'
                  printf 'db-Pa5' >&2; sleep 0.2; printf '5-w0rd\\n' >&2
              multi:
                run: |
                  printf '%s\\n' "$MULTI_SECRET"
                  printf 'ml-first-line-1\\r\\nml-second-line-2\\r\\n'
              url:
                http: { url: "\(serverURL.replacingOccurrences(of: "http://", with: "http://user:${{ vars.pw }}@"))/x?token=${{ vars.token }}&plain=1" }
              stash:
                run: |
                  echo "key=$CALLER_SECRET" >> "$FLOWRUN_OUTPUT"
                  printf 'lines<<EOF\\n%s\\nEOF\\n' "$MULTI_SECRET" >> "$FLOWRUN_OUTPUT"
                  echo ${{ vars.token }}
              reads:
                needs: stash
                run: '[ ${{ tasks.stash.outputs.key }} = \(callerSecret) ]'
              fails:
                run: |
                  echo "about to fail with ${{ vars.token }}" >&2
                  exit 3
            groups:
              g:
                tasks:
                  member: { run: 'echo "member says $DB_PASSWORD"' }
            joins:
              block: { wait: [stash, whole, multi] }
              results: { wait: [g], report: [g.results] }
            """
        }

        /// Every byte flowrun wrote: stdout, stderr, and every file of the run
        /// record except the tasks' own `$FLOWRUN_OUTPUT` files.
        static func everythingWritten(by run: FlowrunRun, record directory: String) -> [(what: String, text: String)] {
            var written = [("stdout", run.stdout), ("stderr", run.stderr)]
            let enumerator = FileManager.default.enumerator(atPath: directory)
            while let relative = enumerator?.nextObject() as? String {
                guard !relative.hasPrefix("outputs/") else { continue }
                var isDirectory: ObjCBool = false
                let path = directory + "/" + relative
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
                written.append((relative, String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)))
            }
            return written
        }

        @Test(arguments: ["plain", "json", "tty"])
        func noSecretInAnythingFlowrunWrote(output: String) throws {
            let sandbox = try RunSandbox()
            let server = try OneRequestHTTPServer(status: 200, body: "body holds \(Self.callerSecret) too\n")
            let run = try sandbox.run(
                Self.workflow(serverURL: server.url), ["--var", "token=\(Self.cliToken)", "--stream"], output: output,
                environment: Self.callerEnvironment)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "only 'fails' fails\n\(run)")
            let record = try sandbox.record()
            for task in ["whole", "received", "split", "multi", "url", "stash", "reads", "member"] {
                #expect(record.status(task) == "succeeded", "\(task): \(record.overview)")
            }
            #expect(record.status("fails") == "failed")
            // The server got the real values: masking is for what flowrun shows.
            let request = try #require(server.request(), "no request\n\(run)")
            #expect(request.contains("token=\(Self.cliToken)"), "\(request)")
            let written = Self.everythingWritten(by: run, record: record.directory)
            #expect(written.map(\.what).contains("events.jsonl") && written.map(\.what).contains("summary.json"))
            #expect(record.logText("split") != nil, "\(written.map(\.what))")  // read as flowrun logs does: logs/small.pack, then the file
            for (what, text) in written {
                for secret in Self.forbidden {
                    #expect(!text.contains(secret), "\(what) holds '\(secret)':\n\(text.prefix(3000))")
                }
            }
            // Masked, not dropped.
            #expect(record.logText("whole") == "whole *** *** *** ***\n")
            #expect(record.logText("split")?.contains("*** and more\n") == true, "\(record.logText("split") ?? "")")
            #expect(record.logText("multi") == "***\n***\r\n***\r\n", "\(record.logText("multi") ?? "")")
            #expect(record.logText("url")?.hasPrefix("GET http://***:***@127.0.0.1:\(server.port)/x?token=***&plain=***\n") == true,
                    "\(record.logText("url") ?? "")")
            #expect(record.logText("url")?.contains("body holds *** too") == true)
            // The tasks' own files keep what they wrote (a documented leak).
            #expect(try String(contentsOfFile: record.outputsPath("stash", attempt: 1), encoding: .utf8).contains(Self.callerSecret))
        }

        @Test(arguments: ["plain", "json"])
        func theDryRunShowsNoSecret(output: String) throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.workflow(serverURL: "http://127.0.0.1:9"))
            let run = try FlowrunBinary.run(
                [workflow, "--dry-run", "--output", output, "--var", "token=\(Self.cliToken)"], in: sandbox.path,
                environment: sandbox.environment.merging(Self.callerEnvironment) { _, new in new })
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            for secret in Self.forbidden {
                #expect(!(run.stdout + run.stderr).contains(secret), "holds '\(secret)'\n\(run)")
            }
            #expect(run.stdout.contains("http://***:***@127.0.0.1:9/x?token=***&plain=***"), "\(run)")
            if output == "json" {
                let plan = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
                let vars = (plan["workflow"] as? [String: Any])?["vars"] as? [String: String]
                #expect(vars?["token"] == "***" && vars?["pw"] == "***" && vars?["suffix"] == "w0rd", "\(vars ?? [:])")
            } else {
                #expect(run.stdout.contains("vars: token=***, suffix=w0rd, pw=***"), "\(run)")
            }
        }

        /// A server that sends its head and then a byte every 100 ms: the
        /// task's `timeout` stops it, and the reason says which limit.
        @Test func aTricklingServerIsStoppedAtTheTimeout() throws {
            let sandbox = try RunSandbox()
            let server = try TricklingHTTPServer(interval: .milliseconds(100), limit: .seconds(15))
            let run = try sandbox.run("""
                tasks:
                  slow: {http: {url: "\(server.url)/drip"}, timeout: 1s}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            #expect(run.wallSeconds < 5, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("slow") == "timed_out", "\(record.overview)")
            #expect(record.finished("slow")?["reason"] as? String == "timed out after 1s", "\(record.finished("slow") ?? [:])")
            let outcome = server.outcome()
            #expect(outcome.bytesSent >= 3, "the server trickled \(outcome.bytesSent) bytes")
            let hungUp = try #require(outcome.hungUpAfter, "flowrun never hung up")
            #expect(hungUp > 0.8 && hungUp < 3, "hung up after \(hungUp) s")
        }
    }
}
