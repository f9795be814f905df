import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEndParallel {
    /// SPEC §3 "inside `run:`, each interpolated value is inserted as ONE
    /// shell-quoted word", §2 "no value can set another key": hostile
    /// upstream values reach downstream tasks byte-exact and run nothing.
    @Suite struct RunInjectionTests {
        /// Every way to break out of a shell word, plus bytes that test
        /// the quoting itself (newlines, a trailing newline, non-ASCII, a tab).
        static let hostile = [
            "'; touch pwned #",
            "$(touch pwned)",
            "`touch pwned`",
            "\"; touch pwned; echo \"",
            "' \"'\"' '",
            "a\nb; touch pwned\n\ttab",
            "${IFS}touch${IFS}pwned",
            "x && touch pwned || touch pwned",
            "*",
            "-n",
            "é ☃ \\ \\\\ \\n %s %d",
            "trailing newline\n",
            "",
        ].map(Payload.init)

        struct Payload: CustomTestStringConvertible, Sendable {
            var text: String
            init(_ text: String) { self.text = text }
            var testDescription: String { text.debugDescription }
        }

        /// All of them in one value too, joined by newlines.
        static var combined: Payload { Payload(hostile.map(\.text).joined(separator: "\n")) }

        /// The workflow: `up` reads the payload from a file the test wrote and
        /// stashes it as output `v` (heredoc) and as stdout; downstream tasks
        /// use it in `run:` (bare and as an assignment), in `env:`, and through
        /// the `if:` and `finally` paths.
        static let workflow = """
            tasks:
              up:
                run: |
                  { echo 'v<<FLOWRUN_PAYLOAD_END'; cat "$SANDBOX/payload"; echo; echo 'FLOWRUN_PAYLOAD_END'; } >> "$FLOWRUN_OUTPUT"
                  cat "$SANDBOX/payload"
              in-run:
                needs: up
                run: printf '%s' ${{ tasks.up.outputs.v }} > "$SANDBOX/out-run"
              in-assignment:
                needs: up
                run: |
                  value=${{ tasks.up.outputs.v }}
                  printf '%s' "$value" > "$SANDBOX/out-assignment"
              in-env:
                needs: up
                env: {V: "${{ tasks.up.outputs.v }}"}
                run: printf '%s' "$V" > "$SANDBOX/out-env"
              from-stdout:
                needs: up
                run: printf '%s' ${{ tasks.up.stdout }} > "$SANDBOX/out-stdout"
              compared:
                needs: up
                if: ${{ tasks.up.outputs.v == tasks.up.stdout }}
                run: printf '%s' ${{ tasks.up.outputs.v }}${{ tasks.up.stdout }} > "$SANDBOX/out-twice"
            finally:
              late:
                run: printf '%s' ${{ tasks.up.outputs.v }} > "$SANDBOX/out-finally"
            """

        @Test(arguments: hostile + [combined])
        func aHostileValueArrivesByteExactAndRunsNothing(_ payload: Payload) throws {
            let sandbox = try RunSandbox()
            try sandbox.directory.write(payload.text, to: "payload")
            let run = try sandbox.run(Self.workflow)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses.filter { $0.key != "compared" }.values.allSatisfy { $0 == "succeeded" }, "\(record.statuses)\n\(record.overview)")
            #expect(record.outputs("up") == ["v": payload.text], "the output was not stashed whole: \(record.outputs("up"))")

            // The stash drops stdout's one trailing newline (SPEC §2).
            let stdoutValue = payload.text.hasSuffix("\n") ? String(payload.text.dropLast()) : payload.text
            let expected: [(String, String)] = [
                ("out-run", payload.text), ("out-assignment", payload.text), ("out-env", payload.text),
                ("out-stdout", stdoutValue), ("out-finally", payload.text),
            ]
            for (file, value) in expected {
                let written = try #require(FileManager.default.contents(atPath: sandbox.file(file)), "\(file) was not written\n\(record.overview)")
                #expect(Array(written) == Array(value.utf8), "\(file): \(String(decoding: written, as: UTF8.self).debugDescription) != \(value.debugDescription)")
            }
            if stdoutValue == payload.text {
                #expect(sandbox.read("out-twice") == payload.text + payload.text, "two values side by side should make one word")
            } else {
                #expect(record.status("compared") == "skipped")
            }
            #expect(Self.filesNamed("pwned", under: sandbox.path).isEmpty, "a value ran as shell code: \(Self.filesNamed("pwned", under: sandbox.path))")
        }

        /// `$FLOWRUN_OUTPUT` cannot be forged: a multi-line value holding
        /// `key=value` lines and near-miss delimiters stays one value; a
        /// literal `\n` stays two characters; printing never sets a key; an
        /// unclosed heredoc sets nothing after it.
        @Test func aValueCannotSetAnotherKey() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(#"""
                tasks:
                  heredoc:
                    run: |
                      {
                        echo 'notes<<END'
                        echo 'line one'
                        echo 'forged=1'
                        echo 'END2'
                        echo 'xEND'
                        echo 'more<<END'
                        echo 'END'
                        echo 'kept=yes'
                      } >> "$FLOWRUN_OUTPUT"
                  one-line:
                    run: |
                      printf '%s\n' 'a=1\nb=2' >> "$FLOWRUN_OUTPUT"
                      printf '%s\n' 'c=3 d=4' >> "$FLOWRUN_OUTPUT"
                  printed:
                    run: |
                      echo 'printed=1'
                      echo '::set-output name=printed::1'
                      echo 'printed<<X' >&2
                      echo 'X' >&2
                  unclosed:
                    run: |
                      {
                        echo 'before=ok'
                        echo 'body<<EOF'
                        echo 'smuggled=1'
                        echo 'EOF '
                      } >> "$FLOWRUN_OUTPUT"
                  other-task:
                    run: |
                      echo 'tasks.heredoc.outputs.notes=overwritten' >> "$FLOWRUN_OUTPUT"
                      echo 'heredoc.notes=overwritten' >> "$FLOWRUN_OUTPUT"
                  echo-forwarded:
                    needs: heredoc
                    run: |
                      notes=${{ tasks.heredoc.outputs.notes }}
                      echo "copy=$(printf '%s\n' "$notes" | head -n 1)" >> "$FLOWRUN_OUTPUT"
                      printf '%s' ${{ tasks.heredoc.outputs.forged }} > "$SANDBOX/forged"
                """#)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.outputs("heredoc") == ["notes": "line one\nforged=1\nEND2\nxEND\nmore<<END", "kept": "yes"],
                    "\(record.outputs("heredoc"))")
            #expect(record.outputs("one-line") == ["a": "1\\nb=2", "c": "3 d=4"], "\(record.outputs("one-line"))")
            #expect(record.outputs("printed").isEmpty, "printing set a key: \(record.outputs("printed"))")
            #expect(record.stdout("printed") == "printed=1\n::set-output name=printed::1")
            // 'EOF ' is not 'EOF': the heredoc never closes, so nothing after it counts.
            #expect(record.outputs("unclosed") == ["before": "ok"], "\(record.outputs("unclosed"))")
            let log = try #require(record.logText("unclosed"))
            #expect(log.contains("never closed"), "the problem is not in the task's log:\n\(log)")
            // Keys with dots are invalid, and no task can set another's outputs.
            #expect(record.outputs("other-task").isEmpty, "\(record.outputs("other-task"))")
            #expect(record.outputs("echo-forwarded") == ["copy": "line one"])
            #expect(sandbox.read("forged") == "", "a key forged inside a value was readable downstream")
        }

        /// Every file or directory called `name` below `root`.
        static func filesNamed(_ name: String, under root: String) -> [String] {
            guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
            var found: [String] = []
            while let relative = walker.nextObject() as? String {
                if (relative as NSString).lastPathComponent == name { found.append(relative) }
            }
            return found
        }
    }
}
