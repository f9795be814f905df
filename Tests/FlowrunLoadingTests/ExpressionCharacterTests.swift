import FlowrunModel
import FlowrunTestSupport
import Testing

/// The expression tokenizer and the search for `${{` in the file read UTF-8
/// bytes, yet tokens, messages and columns stay those of Characters: a
/// non-ASCII letter before an expression counts one column, and an accent
/// written as a second scalar joins the character before it, as it did
/// when both walked Characters.
@Suite struct ExpressionCharacterTests {
    func errors(_ run: String) -> [String] {
        diagnostics("""
            vars: { v: "1" }
            tasks:
              a:
                run: \(run)
            """)
    }

    @Test func columnsCountCharactersNotBytes() {
        // 'é' and 'ü' are two bytes each: a byte count would say column 37.
        #expect(errors("echo é ${{ 'ü' == vars.v @ }}") == ["test.yaml:4:35: error: unexpected character '@'"])
        #expect(errors("echo ü ${{ vars.v }} é ${{ vars.nope }}") == ["test.yaml:4:37: error: unknown variable 'vars.nope'; declare it under 'vars:'"])
    }

    @Test func anAccentAfterAQuoteIsNotTheQuote() {
        // "'" + U+0301 is one Character, so the string does not end there.
        #expect(errors("echo ${{ 'x'\u{301} == vars.v }}") == ["test.yaml:4:19: error: unterminated string (missing ')"])
    }

    @Test func anAccentJoinsTheLetterBeforeIt() {
        #expect(errors("echo ${{ vars.v\u{301} }}") == ["test.yaml:4:19: error: expected vars.NAME, found 'vars.'"])
        #expect(errors("echo ${{ e\u{301} }}") == [
            "test.yaml:4:19: error: unknown value 'e\u{301}'; expected vars.NAME, env.NAME, tasks.T.…, groups.G.…, joins.J.…, host.…, item, item.KEY, index, a function call or a quoted string"
        ])
    }

    @Test func aNonASCIIDigitContinuesANumber() {
        #expect(errors("echo ${{ 1\u{663} }}") == ["test.yaml:4:19: error: '1\u{663}' is not a number"])
    }

    @Test func formatCountsItsTextInCharacters() {
        #expect(errors("echo ${{ format('é}', vars.v) }}") == [
            "test.yaml:4:19: error: format(): '}' without a '{' before it; write '}}' for a literal brace (at character 2 of its text)"
        ])
    }
}
