@testable import FlowrunModel
import FlowrunTestSupport
import Testing

/// `Expression.description` (the `if:` row and the `value:` rows of a dry
/// run, its JSON, the record's condition) is written into one string; these
/// hold its text to what the file says.
@Suite struct ExpressionTextTests {
    static func condition(_ text: String) throws -> Expression {
        let workflow = try workflow("""
            vars: { a: "x,y", b: it, c: "3" }
            tasks:
              t: { sleep: 0, if: "\(text)" }
            """)
        return try #require(workflow.tasks.first?.condition?.value)
    }

    @Test(arguments: [
        "format('it''s {0}', join(split(vars.a, ','), ' ')) == 'x'",
        "!contains(vars.a, 'x') || vars.b == 'it' && vars.c != 3",
        "(vars.a == 'x' || vars.b == 'y') && !(vars.c < 2)",
        "startsWith(format('{0}{1}', vars.a, trim(vars.b)), '''')",
        "toJSON(fromJSON('[1, 2]')) == '[1,2]' && true",
    ])
    func anExpressionIsWrittenBackAsTheFileWroteIt(_ text: String) throws {
        #expect(try Self.condition(text).description == text)
    }

    /// The text's own spacing and parentheses are not kept: the written form is the one the dry run shows.
    @Test func spacingAndNeedlessParenthesesAreWrittenTheOneWay() throws {
        #expect(try Self.condition("(vars.a=='x')&&format( '{0}' ,vars.b )!=''").description == "vars.a == 'x' && format('{0}', vars.b) != ''")
    }

    /// A quote that a combining mark joins is one character that is not a
    /// quote: written as it is, as before the text was written by byte.
    @Test func onlyAQuoteOfItsOwnIsDoubled() {
        let joined = "x'\u{301}y"
        #expect(Expression.string(joined).description == "'" + joined + "'")
        #expect(Expression.string("a'b").description == "'a''b'")
        #expect(Expression.string("").description == "''")
    }
}
