import FlowrunModel
import FlowrunTestSupport
import Testing

/// What `validate` says about a function call before anything runs: each
/// message at the file's line and column, naming the fix.
@Suite struct ExpressionFunctionValidationTests {
    func errors(_ expression: String) -> [String] {
        diagnostics("""
            vars: { v: "1" }
            tasks:
              a:
                run: echo ${{ \(expression) }}
            """)
    }

    @Test func anUnknownFunctionSuggestsTheNearestOne() {
        #expect(errors("formt('{0}', vars.v)") == [
            "test.yaml:4:19: error: unknown function 'formt()' (did you mean 'format'?); the functions are format, join, contains, startsWith, endsWith, toJSON, fromJSON, replace, split, trim"
        ])
        #expect(errors("startswith(vars.v, '1')").isEmpty, "names are case-insensitive, as in GitHub")
    }

    @Test(arguments: [
        ("contains(vars.v)", "contains() takes 2 arguments, found 1: write contains(search, item)"),
        ("format()", "format() takes at least 1 argument, found 0: write format(text, value0, value1, …)"),
        ("join(vars.v, ',', 'x')", "join() takes 1 or 2 arguments, found 3: write join(array, separator = ',')"),
        ("trim()", "trim() takes 1 argument, found 0: write trim(text)"),
    ])
    func theWrongNumberOfArgumentsSaysHowToCallIt(expression: String, message: String) {
        #expect(errors(expression) == ["test.yaml:4:19: error: " + message])
    }

    @Test(arguments: [
        ("format('{1}', vars.v)", "format(): {1} needs 2 values after the text, found 1"),
        ("format('{0', vars.v)", "format(): '{' starts a placeholder like {0}; write '{{' for a literal brace (at character 1 of its text)"),
        ("format('a}', vars.v)", "format(): '}' without a '{' before it; write '}}' for a literal brace (at character 2 of its text)"),
        ("fromJSON('[a]')", "fromJSON(): '[a]' is not JSON (write strings in double quotes inside it: '[\"a\", \"b\"]')"),
        ("split(vars.v, '')", "split(): the separator is empty; write split(text, ',') or another separator"),
        ("replace(vars.v, '', 'x')", "replace(): the text to find is empty"),
    ])
    func literalArgumentsAreCheckedBeforeTheRun(expression: String, message: String) {
        #expect(errors(expression) == ["test.yaml:4:19: error: " + message])
    }

    @Test func callsAndHostFactsReadTheSameNeedsRules() {
        #expect(errors("format('{0}', tasks.b.stdout)").count == 1)
        #expect(errors("host.arch").isEmpty)
        #expect(errors("host.arh") == ["test.yaml:4:19: error: 'host.arh': host offers os, arch or cpus (did you mean 'arch'?)"])
        #expect(errors("format('{0}', vars.nope)") == [
            "test.yaml:4:33: error: unknown variable 'vars.nope'; declare it under 'vars:'"
        ])
    }

    @Test func aMissingCloseParenthesisIsAtItsPlace() {
        #expect(errors("trim(vars.v") == ["test.yaml:4:31: error: expected ',' or ')' after an argument of trim(), found the end of the expression"])
    }
}
