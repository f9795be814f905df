import Foundation
import Testing

extension RunEndToEndParallel {
    /// SPEC §11 "a secret reads `***`, also when a task prints it": printed
    /// through jq, PHP-, Go- and Python-style JSON, URL encoders and base64
    /// (at each alignment, padded or not, URL-safe), a declared secret shows
    /// as `***` on the console, in the log and in the summary.
    @Suite struct RunSecretEncodingsTests {
        static let secret = "Tök/en+\"a&b<c>d 1234"

        /// One task per encoding, each printing `LABEL: ENCODED` lines.
        static let workflow = #"""
            secrets: [API_SECRET]
            tasks:
              json:
                run: |
                  printf 'jq: %s\n' "$(jq -cn --arg s "$API_SECRET" '{t: $s}')"
                  python3 - <<'PY'
                  import json, os
                  s = os.environ["API_SECRET"]
                  print("php: " + json.dumps(s, ensure_ascii=False).replace("/", "\\/"))
                  print("python: " + json.dumps(s))
                  print("upper: " + json.dumps(s).replace("\\u00f6", "\\u00F6"))
                  print("go: " + json.dumps(s, ensure_ascii=False).replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"))
                  PY
              url:
                run: |
                  python3 - <<'PY'
                  import os, re, urllib.parse
                  s = os.environ["API_SECRET"]
                  print("quote: " + urllib.parse.quote(s, safe=""))
                  print("plus: " + urllib.parse.quote_plus(s))
                  print("lower: " + re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(s, safe="")))
                  PY
                  printf 'js: %s\n' "$(node -e 'console.log(encodeURIComponent(process.env.API_SECRET))')"
              base64:
                run: |
                  printf 'whole: %s\n' "$(printf '%s' "$API_SECRET" | base64 -w0)"
                  printf 'newline: %s\n' "$(printf '%s\n' "$API_SECRET" | base64 -w0)"
                  printf 'one: %s\n' "$(printf 'x%s' "$API_SECRET" | base64 -w0)"
                  printf 'two: %s\n' "$(printf 'xy%s!' "$API_SECRET" | base64 -w0)"
                  printf 'urlsafe: %s\n' "$(printf '%s' "$API_SECRET" | base64 -w0 | tr '+/' '-_' | tr -d =)"
            """#

        @Test func aSecretIsMaskedInItsJSONURLAndBase64Forms() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow, ["--stream"], environment: ["API_SECRET": Self.secret])
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let expected: [String: [String]] = [
                "json": [#"jq: {"t":"***"}"#, #"php: "***""#, #"python: "***""#, #"upper: "***""#, #"go: "***""#],
                "url": ["quote: ***", "plus: ***", "lower: ***", "js: ***"],
            ]
            for (task, lines) in expected {
                #expect(record.logText(task) == lines.joined(separator: "\n") + "\n", "\(task): \(record.logText(task) ?? "")")
            }
            // base64: the characters that hold the secret's bits alone are masked; a few at the edges hold a neighbour's.
            let base64Lines = (record.logText("base64") ?? "").split(separator: "\n").map(String.init)
            let patterns = ["whole": #"^\*\*\*$"#, "newline": #"^\*\*\*[A-Za-z0-9+/=]{1,4}$"#, "one": #"^[A-Za-z0-9+/]{1,3}\*\*\*[A-Za-z0-9+/=]{1,4}$"#,
                            "two": #"^[A-Za-z0-9+/]{1,3}\*\*\*[A-Za-z0-9+/=]{1,4}$"#, "urlsafe": #"^\*\*\*$"#]
            #expect(base64Lines.count == patterns.count, "\(base64Lines)")
            for line in base64Lines {
                let parts = line.split(separator: ": ", maxSplits: 1).map(String.init)
                let pattern = try #require(patterns[parts[0]], "\(line)")
                #expect(parts[1].range(of: pattern, options: .regularExpression) != nil, "\(line)")
            }
            // Nothing flowrun wrote holds a form of the secret: console, events, summary, logs.
            let data = Data(Self.secret.utf8)
            let forms = [Self.secret, data.base64EncodedString(), String(data.base64EncodedString().dropLast(4)), "T\\u00f6k\\/en", "T%C3%B6k%2Fen%2B%22a%26b%3Cc%3Ed%201234"]
            for (what, text) in RunEndToEnd.RunSecretsTests.everythingWritten(by: run, record: record.directory) {
                for form in forms {
                    #expect(!text.contains(form), "\(what) holds \(form)")
                }
            }
        }

        /// Shell and HTML quoting, printed by the real tools (issue 32's tester): bash -x's
        /// `'\''`, printf %q's backslashes, jq's @sh and @html, Python's repr of bytes, PyYAML's `\xE9`.
        @Test func aSecretIsMaskedInItsShellHTMLAndEscapedByteForms() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(#"""
                secrets: [API_SECRET]
                tasks:
                  quoted:
                    run: |
                      bash -xc ': "$1"' _ "$API_SECRET" 2>&1 | sed 's/^/xtrace: /'
                      bash -c 'printf "q: %q\n" "$1"' _ "$API_SECRET"
                      printf '%s' "$API_SECRET" | jq -Rr '"sh: " + @sh, "html: " + @html'
                      python3 -c 'import os; print("repr: " + repr(os.environ["API_SECRET"].encode()))'
                      python3 -c 'import os; print("points: " + os.environ["API_SECRET"].encode("unicode_escape").decode().replace("\\xe9", "\\xE9"))'
                """#, ["--stream"], environment: ["API_SECRET": "p@ss w/0rd'é+&=X"])
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.logText("quoted") == """
                xtrace: + : '***'
                q: ***
                sh: '***'
                html: ***
                repr: b"***"
                points: ***

                """, "\(record.logText("quoted") ?? "")")
            for (what, text) in RunEndToEnd.RunSecretsTests.everythingWritten(by: run, record: record.directory) {
                for form in ["w/0rd", "0rd"] { #expect(!text.contains(form), "\(what) holds \(form)") }
            }
        }
    }
}
