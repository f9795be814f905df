import Foundation
import Testing

extension RunEndToEndParallel {
    /// SPEC §11 "a value inserted by `${{ }}` never runs as code, in any
    /// shell context": hostile run-time values (a stdout fan-out's items, a
    /// template parameter) inserted as a word, in double and single quotes,
    /// `$'…'`, heredocs (quoted or not), backticks, `$( )`, `case`, `[[ ]]`,
    /// `${x:-…}` and a comment run nothing, and each prints its exact text.
    @Suite struct RunShellContextTests {
        static let hostile = [
            "x$(touch pwned)",
            "`touch pwned`",
            "'; touch pwned; '",
            "\"; touch pwned; echo \"",
            "a\nb; touch pwned\n",
            "trailing backslash \\",
            "\\`touch pwned\\` \\$(touch pwned) \\\\",
            "$((1+1)) ${HOME} $HOME",
            "} ]] esac ;; ) EOF",
            "*",
            "é ☃ \u{301}' tab\there",
            "line\n",
            "",
        ]

        /// Each context writes what the shell made of the value to its own
        /// file in `out/INDEX`; `in/INDEX` holds the value as the test wrote it.
        static let workflow = #"""
            shell: bash
            tasks:
              up:
                run: cat "$SANDBOX/items.json"
            groups:
              each:
                needs: up
                foreach: ${{ tasks.up.stdout }}
                task:
                  run: |
                    cd "$SANDBOX/out/$FLOWRUN_INDEX"
                    printf '%s' ${{ item }} > word
                    printf '%s' "<${{ item }}>" > double
                    printf '%s' '<${{ item }}>' > single
                    printf '%s' $'<${{ item }}>' > dollar-single
                    cat > heredoc <<END_OF_TEXT
                    <${{ item }}>
                    END_OF_TEXT
                    cat > quoted-heredoc <<'END_OF_TEXT'
                    <${{ item }}>
                    END_OF_TEXT
                    x=`printf '%s.' ${{ item }}`; printf '%s' "${x%.}" > backticks
                    x="`printf '%s.' "${{ item }}"`"; printf '%s' "${x%.}" > backticks-in-quotes
                    x=$(printf '%s.' "${{ item }}"); printf '%s' "${x%.}" > substitution
                    p=$(cat "$SANDBOX/in/$FLOWRUN_INDEX"; printf .)
                    case "$p" in ${{ item }}.) echo match ;; *) echo differs ;; esac > case
                    [[ "$p" == ${{ item }}. ]] && echo match > test || echo differs > test
                    y=${FLOWRUN_TEST_UNSET:-${{ item }}}; printf '%s' "$y" > default
                    # a comment holding ${{ item }} ends at the line's end
                    echo ran > after-comment
            """#

        @Test func hostileFanOutItemsPrintTheirTextInEveryShellContextAndRunNothing() throws {
            let sandbox = try RunSandbox()
            let items = try JSONSerialization.data(withJSONObject: Self.hostile)
            try sandbox.directory.write(String(decoding: items, as: UTF8.self), to: "items.json")
            for (index, value) in Self.hostile.enumerated() {
                try FileManager.default.createDirectory(atPath: sandbox.file("out/\(index)"), withIntermediateDirectories: true)
                try FileManager.default.createDirectory(atPath: sandbox.file("in"), withIntermediateDirectories: true)
                try sandbox.directory.write(value, to: "in/\(index)")
            }
            let run = try sandbox.run(Self.workflow)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            for (index, value) in Self.hostile.enumerated() {
                let expected: [(String, String)] = [
                    ("word", value), ("double", "<\(value)>"), ("single", "<\(value)>"), ("dollar-single", "<\(value)>"),
                    ("heredoc", "<\(value)>\n"), ("quoted-heredoc", "<\(value)>\n"),
                    ("backticks", value), ("backticks-in-quotes", value), ("substitution", value),
                    ("case", "match\n"), ("test", "match\n"), ("default", value), ("after-comment", "ran\n"),
                ]
                for (file, text) in expected {
                    let written = sandbox.read("out/\(index)/\(file)")
                    #expect(written.map { Array($0.utf8) } == Array(text.utf8), "item \(index) \(value.debugDescription), \(file): \(written.debugDescription)")
                }
            }
            #expect(RunInjectionTests.filesNamed("pwned", under: sandbox.path).isEmpty, "a value ran as shell code")
        }

        /// A template parameter is a value like any other: a literal one
        /// and one read at run time land in a heredoc and in double quotes
        /// as their text.
        @Test func hostileTemplateParametersPrintTheirTextAndRunNothing() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(#"""
                templates:
                  show:
                    params: { v: ~, file: ~ }
                    run: |
                      cat > "$SANDBOX/${{ params.file }}" <<EOF
                      [${{ params.v }}] "${{ params.v }}"
                      EOF
                      printf '%s' "<${{ params.v }}>" >> "$SANDBOX/${{ params.file }}"
                tasks:
                  up:
                    run: printf '%s\n' 'v=y$(touch pwned)`touch pwned`' >> "$FLOWRUN_OUTPUT"
                  literal: { uses: show, with: { v: "x$(touch pwned) '\"", file: literal } }
                  at-run-time: { uses: show, needs: up, with: { v: "${{ tasks.up.outputs.v }}", file: run-time } }
                """#)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.read("literal") == "[x$(touch pwned) '\"] \"x$(touch pwned) '\"\"\n<x$(touch pwned) '\">")
            #expect(sandbox.read("run-time") == "[y$(touch pwned)`touch pwned`] \"y$(touch pwned)`touch pwned`\"\n<y$(touch pwned)`touch pwned`>")
            #expect(RunInjectionTests.filesNamed("pwned", under: sandbox.path).isEmpty, "a value ran as shell code")
        }

        /// GitHub's idiom stores the value, not the value in quotes, and the
        /// shell that was right before (a quote closed before `${{`) still is.
        @Test func aValueInsideDoubleQuotesIsItsTextWithoutAWarning() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(#"""
                vars: { src: "true", v: "5.10" }
                tasks:
                  set:
                    run: |
                      echo "src=${{ vars.src }}" >> "$FLOWRUN_OUTPUT"
                      echo "toolchain="${{ vars.v }} >> "$FLOWRUN_OUTPUT"
                  use:
                    needs: set
                    if: ${{ tasks.set.outputs.src == 'true' }}
                    run: echo "ran with ${{ tasks.set.outputs.toolchain }}" > "$SANDBOX/used"
                """#)
            #expect(run.exitStatus == 0, "\(run)")
            #expect(!run.stderr.contains("warning"), "\(run.stderr)")
            #expect(try sandbox.record().outputs("set") == ["src": "true", "toolchain": "5.10"])
            #expect(sandbox.read("used") == "ran with 5.10\n")
        }

        /// Where bash itself evaluates a value as code, validation refuses
        /// it at the `${{`, exit 2, naming the env: form.
        @Test(arguments: [
            ("echo $(( ${{ item }} / 2 ))", "$(( ))"),
            ("(( ${{ item }} > 1 )) && echo big", "(( ))"),
            ("let n=${{ item }}+1", "let"),
            ("if [[ ${{ item }} -gt 1 ]]; then echo big; fi", "[[ -eq ]]"),
            ("a[${{ item }}]=1", "an array subscript"),
            ("echo \"${a[${{ item }}]}\"", "an array subscript"),
            ("echo \"${HOME:${{ item }}}\"", "${name:offset}"),
        ])
        func aValueWhereBashEvaluatesCodeIsRefusedAtItsPlace(_ line: String, _ construct: String) throws {
            let sandbox = try RunSandbox()
            let text = """
                shell: bash
                groups:
                  halves:
                    foreach: ["4", "x[$(touch pwned)]"]
                    task:
                      run: \(line)
                """
            let run = try sandbox.run(text)
            #expect(run.exitStatus == 2, "\(run)")
            let column = line.utf8.count - (line.split(separator: "${{", maxSplits: 1).last.map { $0.utf8.count + 3 } ?? 0) + 12
            let expected = "workflow.yaml:6:\(column): error: ${{ item }} is inside \(construct), where bash evaluates the text as code"
            #expect(run.stderr.contains(expected), "\(expected)\n\(run.stderr)")
            #expect(run.stderr.contains("pass it through env: (env: {ITEM: \"${{ item }}\"}), check it is a number or a name before the shell evaluates it ([[ $ITEM =~ ^-?[0-9]+$ ]] || exit 1"), "\(run.stderr)")
            #expect(RunInjectionTests.filesNamed("pwned", under: sandbox.path).isEmpty)
        }
    }
}
