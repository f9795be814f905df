import Foundation
import Testing

extension RunEndToEndParallel {
    /// `flowrun FILE test -- WORDS` (SPEC §15): the words after `--` reach
    /// the named targets' `${{ args }}` as one quoted shell word each — a
    /// word that looks like shell code stays text — and no other task.
    @Suite struct PassedArgumentsTests {
        static let workflow = """
            tasks:
              build: { run: 'printf "build<%s>\\n" ${{ args }} >> "$SANDBOX/words"' }
              test:
                aliases: [t]
                needs: [build]
                run: 'printf "test<%s>\\n" go test ${{ args }} >> "$SANDBOX/words"'
            """

        @Test func theWordsAfterDoubleDashAreTheNamedTargetsArguments() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.workflow, ["t", "--", "-run", "Test X", "$(touch pwned)", "--dry-run"])
            #expect(run.exitStatus == 0, "\(run)")
            // build runs for test's sake and sees no words: printf with none prints one empty one.
            #expect(sandbox.lines("words") == ["build<>", "test<go>", "test<test>", "test<-run>", "test<Test X>", "test<$(touch pwned)>", "test<--dry-run>"], "\(run)")
            #expect(!sandbox.exists("pwned"))
        }

        @Test func theDryRunShowsTheWordsAndMistakesAreCommandLineErrors() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: Self.workflow)
            let plan = try FlowrunBinary.run([file, "test", "--dry-run", "--", "it's"])
            #expect(plan.exitStatus == 0, "\(plan)")
            #expect(plan.stdout.contains(#"go test 'it'\''s'"#), "\(plan)")
            let unnamed = try FlowrunBinary.run([file, "--dry-run", "--", "x"])
            #expect(unnamed.exitStatus == 2, "\(unnamed)")
            #expect(unnamed.stderr.contains("the words after -- are for the target named before them"), "\(unnamed)")
            let unread = try FlowrunBinary.run([sandbox.write(workflow: "tasks: { a: { run: 'true' } }\n", to: "plain.yaml"), "a", "--dry-run", "--", "x"])
            #expect(unread.exitStatus == 2, "\(unread)")
            #expect(unread.stderr.contains("which no task of 'a' reads"), "\(unread)")
        }

        /// `${{ args[N] }}` is word N after `--` (from 0) as one value,
        /// wherever an expression goes (`if:`, `env:`, inside quotes in
        /// `run:`); past the last word it is '' like `"$N"` in sh; a task the
        /// command line did not name reads ''; a word that looks like shell
        /// code stays text.
        @Test func argsNIsOneWordAsAValueAnywhere() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  deploy:
                    if: ${{ args[0] == 'prod' }}
                    env: { TARGET: "${{ args[0] }}" }
                    run: 'printf "%s|%s|%s|%s\\n" "$TARGET" "${{ args[1] }}" ${{ args[1] }} "${{ args[2] }}" >> "$SANDBOX/words"'
                  check:
                    needs: [deploy]
                    run: 'printf "check<%s>\\n" "${{ args[0] }}" >> "$SANDBOX/words"'
                """, ["deploy", "--", "prod", "x $(touch pwned) 'y'"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("words") == ["prod|x $(touch pwned) 'y'|x $(touch pwned) 'y'|"], "\(run)")
            #expect(!sandbox.exists("pwned"))
            // The if: reads the word too: another first word skips the task.
            let skipped = try RunSandbox()
            let other = try skipped.run("""
                tasks:
                  deploy: { if: "${{ args[0] == 'prod' }}", run: 'touch "$SANDBOX/deployed"' }
                """, ["deploy", "--", "staging"])
            #expect(other.exitStatus == 0, "\(other)")
            #expect(!skipped.exists("deployed"), "\(other)")
            #expect(try skipped.record().statuses == ["deploy": "skipped"])
        }

        /// `args[N]` in the plan is the word this run passes; a malformed
        /// index is an error at its column.
        @Test func argsNInThePlanAndMalformedIndexes() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: """
                tasks:
                  greet: { env: { WHO: "${{ args[0] }}" }, run: 'echo "$WHO"' }
                """)
            let plan = try FlowrunBinary.run([file, "greet", "--dry-run", "--", "it's"])
            #expect(plan.exitStatus == 0, "\(plan)")
            #expect(plan.stdout.contains(#"WHO="${{ 'it''s' }}" → "it's""#) || plan.stdout.contains(#"WHO="${{ 'it''s' }}" → it's"#), "\(plan)")
            let bad = try sandbox.write(workflow: """
                tasks:
                  a: { run: "echo ${{ args[-1] }} ${{ args[x] }}" }
                """, to: "bad.yaml")
            let check = try FlowrunBinary.run(["validate", bad])
            #expect(check.exitStatus == 2, "\(check)")
            #expect(check.diagnostics == [
                "\(bad):2:28: error: expected args[N] with N a whole number from 0 to 999999 (args[0] is the first word after --)",
                "\(bad):2:44: error: expected args[N] with N a whole number from 0 to 999999 (args[0] is the first word after --)",
            ], "\(check)")
        }

        /// `args[1000000]` is a whole number from 0, as the message asked for,
        /// and was refused with that same message; the limit is now said.
        @Test func anIndexOfAMillionSaysTheLimit() throws {
            let sandbox = try RunSandbox()
            let bad = try sandbox.write(workflow: """
                tasks:
                  a: { run: "echo ${{ args[999999] }} ${{ args[1000000] }}" }
                """, to: "big.yaml")
            let check = try FlowrunBinary.run(["validate", bad])
            #expect(check.exitStatus == 2, "\(check)")
            #expect(check.diagnostics == [
                "\(bad):2:48: error: expected args[N] with N a whole number from 0 to 999999 (args[0] is the first word after --)",
            ], "\(check)")
        }

        @Test func argsInsideAnotherExpressionIsAnErrorAtIt() throws {
            let sandbox = try RunSandbox()
            let file = try sandbox.write(workflow: """
                tasks:
                  a: { run: "echo ${{ args == 'x' }}", env: { X: "${{ args }}" } }
                """)
            let run = try FlowrunBinary.run(["validate", file])
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("\(file):2:23: error: 'args' is the words after --"), "\(run)")
            #expect(run.stderr.contains("\(file):2:55: error: 'args' is the words after --"), "\(run)")
        }

        /// The words are filled in as single-quoted shell words: in quotes or
        /// a heredoc the shell would read them again (a `$( )` in a word would
        /// run in an unquoted heredoc), so `${{ args }}` is only a plain word.
        @Test func argsOnlyAsAPlainWord() throws {
            let sandbox = try RunSandbox()
            let refused = try sandbox.write(workflow: """
                tasks:
                  a:
                    run: |
                      echo "${{ args }}"
                      cat <<EOF
                      ${{ args }}
                      EOF
                """, to: "refused.yaml")
            let check = try FlowrunBinary.run(["validate", refused])
            #expect(check.exitStatus == 2, "\(check)")
            #expect(check.stderr.contains("\(refused):4:13: error: ${{ args }} is the words after -- as separate shell words: write it as a plain word"), "\(check)")
            #expect(check.stderr.contains("\(refused):6:7: error: ${{ args }} is the words after -- as separate shell words"), "\(check)")
        }
    }
}
