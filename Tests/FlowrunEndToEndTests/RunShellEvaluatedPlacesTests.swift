import Foundation
import Testing

extension RunEndToEndParallel {
    /// The tester's holes in "a value never runs as code" (issue 32): places
    /// where bash takes a value as a variable name or as arithmetic, quoted or
    /// not, and scripts whose reading differs between sh and bash, are refused
    /// at validation (exit 2) and the item's `$( )` never runs.
    @Suite struct RunShellEvaluatedPlacesTests {
        @Test(arguments: [
            #"[[ "${{ item }}" -eq 1 ]]"#,
            #"[[ 1 -eq '${{ item }}' ]]"#,
            #"let "x=${{ item }}""#,
            #"declare -i x="${{ item }}""#,
            "for (( i=${{ item }}; i<1; i++ )); do :; done",
            "declare ${{ item }}=1",
            "declare ${{ item }}",
            "printf -v ${{ item }} %s x",
            "read ${{ item }} <<< x",
            "[[ -v ${{ item }} ]]",
            "test -v ${{ item }}",
            "declare -n r=${{ item }}; echo $r",
            "a=([${{ item }}]=1)",
            "declare -i n\n    n=${{ item }}\n    echo $n",
            "n=${{ item }}\n    declare -i n",
            "x=${{ item }}; echo ${!x}",
            "x=${{ item }}; echo $(( x + 1 ))",
            "unset -v ${{ item }}",
            "eval \"echo ${{ item }}\"",
            "cat <<$'EOF'\n    hi\n    EOF\n    echo ${{ item }}",
            "echo $'\\'${{ item }}' '",
        ])
        func aValueWhereBashTakesANameOrArithmeticIsRefused(_ script: String) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                shell: bash
                groups:
                  g:
                    foreach: ["a[$(touch pwned)]"]
                    task:
                      run: |
                        \(script)
                """)
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("workflow.yaml:"), "\(run.stderr)")
            #expect(RunInjectionTests.filesNamed("pwned", under: sandbox.path).isEmpty, "a value ran as shell code")
        }

        /// Under the default /bin/sh (dash) `$'` is no quote: after a `\'` in
        /// it the two shells disagree on the rest, so the value is refused.
        @Test func aDollarQuoteHoldingAnEscapedQuoteIsRefusedUnderSh() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(#"""
                groups:
                  g:
                    foreach: ["$(touch pwned)"]
                    task:
                      run: |
                        echo $'\'${{ item }}' '
                """#)
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("sh and bash end that quote at different places"), "\(run.stderr)")
            #expect(RunInjectionTests.filesNamed("pwned", under: sandbox.path).isEmpty, "a value ran as shell code")
        }

        /// `$'…'` without `\'` reads the same under sh and bash: the value is its text in both.
        @Test(arguments: ["sh", "bash"])
        func aDollarQuoteWithoutAnEscapedQuoteKeepsTheValueUnderBothShells(_ shell: String) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(#"""
                shell: \#(shell)
                groups:
                  g:
                    foreach: ["x'$(touch pwned)"]
                    task:
                      run: |
                        printf '%s' $'<${{ item }}>' > "$SANDBOX/out"
                """#)
            #expect(run.exitStatus == 0, "\(run)")
            // dash reads `$'` as `$` and a quote: the script's own `$'` prints its `$`.
            let expected = shell == "bash" ? "<x'$(touch pwned)>" : "$<x'$(touch pwned)$>"
            #expect(sandbox.read("out") == expected)
            #expect(RunInjectionTests.filesNamed("pwned", under: sandbox.path).isEmpty, "a value ran as shell code")
        }

        /// A one-line value equal to the heredoc's delimiter would end it
        /// early and run the next value as commands: the task fails before it starts.
        @Test(arguments: ["sh", "bash"])
        func aValueThatCouldEndItsHeredocFailsTheTask(_ shell: String) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(#"""
                shell: \#(shell)
                groups:
                  g:
                    foreach:
                      - { a: "EOF", b: "touch pwned" }
                      - { a: "E", b: "touch pwned" }
                      - { a: "x\nEO", b: "touch pwned" }
                      - { a: "EOFX", b: "ok" }
                    task:
                      run: |
                        cat > "$SANDBOX/out-$FLOWRUN_INDEX" <<EOF
                        ${{ item.a }}
                        ${{ item.b }}
                        EOF
                """#)
            #expect(run.exitStatus != 0, "\(run)")
            #expect((run.stdout + run.stderr).contains("which would end its heredoc early"), "\(run)")
            #expect(RunInjectionTests.filesNamed("pwned", under: sandbox.path).isEmpty, "a value ran as shell code")
            #expect(sandbox.read("out-3") == "EOFX\nok\n")
        }
    }
}
