import Foundation
import Testing

extension RunEndToEnd {
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
    }
}
