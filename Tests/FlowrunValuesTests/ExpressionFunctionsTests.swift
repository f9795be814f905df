@testable import FlowrunModel
@testable import FlowrunValues
import FlowrunTestSupport
import Testing

/// The functions and value-returning `&&`/`||` (SPEC §15), as GitHub Actions
/// defines them where it does.
@Suite struct ExpressionFunctionsTests {
    let context = ExpressionValues([
        .variable("version"): .string("1.2.3"),
        .variable("channel"): .string("stable"),
        .variable("empty"): .string(""),
        .variable("list"): .string("a, b ,c"),
        .variable("events"): .string(#"["push","pull_request"]"#),
        .variable("notJSON"): .string("{oops"),
        .task("a", .stdout): .string("  Hello World\n"),
        .task("a", .exitCode): .number(0),
        .group("g", .results): .json(#"[{"name":"g.0","status":"succeeded"}]"#),
    ])

    func text(_ expression: String) throws -> String {
        ExpressionEvaluator.evaluate(try runtimeExpression(expression), in: context).text
    }

    @Test(arguments: [
        // format: {N} placeholders, {{ and }} escapes, any value as text.
        ("format('v{0}', vars.version)", "v1.2.3"),
        ("format('{1}-{0}-{1}', 'a', 'b')", "b-a-b"),
        ("format('{{literal}} {0}', 1.5)", "{literal} 1.5"),
        ("format('no placeholders')", "no placeholders"),
        ("format('{0}', tasks.a.exit_code == 0)", "true"),
        // join: an array's items as text; a non-array is itself.
        ("join(split('a,b,c', ','))", "a,b,c"),
        ("join(split('a,b,c', ','), ' | ')", "a | b | c"),
        ("join(fromJSON('[1, true, null, \"x\"]'), '/')", "1/true//x"),
        ("join('just text', '-')", "just text"),
        // contains: text case-insensitively; arrays by element equality.
        ("contains('Hello World', 'WORLD')", "true"),
        ("contains(tasks.a.stdout, 'xyz')", "false"),
        ("contains('abc', '')", "true"),
        ("contains(fromJSON(vars.events), 'push')", "true"),
        ("contains(fromJSON(vars.events), 'pull')", "false"),
        ("contains(fromJSON('[1, 2]'), '2')", "true"),
        ("contains(groups.g.results, 'g.0')", "false"),
        // startsWith / endsWith, case-insensitively.
        ("startsWith('Linux-x86', 'linux')", "true"),
        ("startsWith('linux', 'Linux-x86')", "false"),
        ("endsWith('app.TAR.GZ', '.tar.gz')", "true"),
        ("endsWith('app.zip', '.gz')", "false"),
        // toJSON / fromJSON.
        ("toJSON('a \"b\"')", #""a \"b\"""#),
        ("toJSON(3)", "3"),
        ("toJSON(true)", "true"),
        ("toJSON(split('x y', ' '))", #"["x","y"]"#),
        ("toJSON(groups.g.results)", #"[{"name":"g.0","status":"succeeded"}]"#),
        ("fromJSON('\"text\"')", "text"),
        ("fromJSON(' {\"a\": [1, 2]} ')", #"{"a":[1,2]}"#),
        ("fromJSON('null')", ""),
        // replace, split, trim.
        ("replace('a-b-c', '-', '_')", "a_b_c"),
        ("replace(vars.version, '.', '')", "123"),
        ("split(vars.list, ',')", #"["a"," b ","c"]"#),
        ("split('a,,b', ',')", #"["a","","b"]"#),
        ("split('', ',')", "[]"),
        ("trim(tasks.a.stdout)", "Hello World"),
        ("trim('   ')", ""),
        // Nesting.
        ("join(split(replace('a.b.c', '.', '/'), '/'), '-')", "a-b-c"),
    ])
    func functions(expression: String, expected: String) throws {
        #expect(try text(expression) == expected, "\(expression)")
    }

    /// The tokenizer appends plain runs of a literal whole; escapes still count.
    @Test func stringLiteralsKeepTheirEscapes() throws {
        #expect(try text("'it''s a ''test'''") == "it's a 'test'")
        #expect(try text(#""tab\there \"quoted\" end""#) == "tab\there \"quoted\" end")
        #expect(try text(#""line\nbreak""#) == "line\nbreak")
        #expect(try text("'ünïcödé ✓' ") == "ünïcödé ✓")
        #expect(try text("format('{0}''{1}', 'a', \"b\")") == "a'b")
    }

    @Test func numbersFromJSONAreNumbers() throws {
        #expect(ExpressionEvaluator.evaluate(try runtimeExpression("fromJSON('42')"), in: context) == .number(42))
        #expect(ExpressionEvaluator.evaluate(try runtimeExpression("fromJSON('true')"), in: context) == .boolean(true))
        #expect(try text("fromJSON('42') == 42") == "true")
    }

    /// `a && b || c` is GitHub's ternary: `&&` and `||` give an operand.
    @Test(arguments: [
        ("vars.channel == 'stable' && 'release' || 'preview'", "release"),
        ("vars.channel == 'beta' && 'release' || 'preview'", "preview"),
        ("vars.empty || 'default'", "default"),
        ("vars.version || 'default'", "1.2.3"),
        ("vars.empty && 'never'", ""),
        ("tasks.a.exit_code && 'never'", "0"),
        ("vars.version && vars.channel", "stable"),
        ("!vars.empty", "true"),
        ("startsWith(vars.version, '1.') && format('v{0}', vars.version) || 'dev'", "v1.2.3"),
    ])
    func logicalOperatorsGiveAnOperand(expression: String, expected: String) throws {
        #expect(try text(expression) == expected, "\(expression)")
    }

    /// Truthiness keeps flowrun's rules, which include GitHub's falsy values.
    @Test(arguments: ["false", "0", "-0", "''", "fromJSON('null')", "fromJSON('0')", "fromJSON('false')"])
    func githubsFalsyValuesAreFalse(expression: String) throws {
        #expect(ExpressionEvaluator.isTrue(try runtimeExpression(expression), in: context) == false)
    }

    /// What only the run can know wrong fails the task, naming the expression.
    @Test func functionsThatCannotGiveAValueFailWhenLocated() throws {
        let location = FlowrunModel.SourceLocation(file: "w.yaml", line: 3, column: 9)
        let bad = try runtimeExpression("fromJSON(vars.notJSON)")
        #expect(throws: TemplateRenderError.self) { try ExpressionEvaluator.evaluate(bad, at: location, in: context) }
        do {
            _ = try ExpressionEvaluator.evaluate(bad, at: location, in: context)
        } catch {
            #expect(error.description == "w.yaml:3:9: ${{ fromJSON(vars.notJSON) }}: fromJSON(): the value is not JSON: '{oops'")
        }
        let format = try runtimeExpression("format(vars.list, 'x')")
        #expect(ExpressionEvaluator.evaluate(format, in: context) == .string("a, b ,c"))
        let stray = try runtimeExpression("format(vars.notJSON, 'x')")
        #expect(throws: TemplateRenderError.self) { try ExpressionEvaluator.evaluate(stray, at: location, in: context) }
        // Unlocated evaluation reads a failed call as ''.
        #expect(ExpressionEvaluator.evaluate(bad, in: context) == .string(""))
    }

    @Test func hostFactsAreTheMachines() throws {
        #expect(try text("host.os") == "linux")
        #expect(try text("host.arch") == HostFacts.arch)
        #expect(!HostFacts.arch.isEmpty && HostFacts.arch != "unknown")
        let cpus = try #require(Int(try text("host.cpus")))
        #expect(cpus >= 1)
        #expect(try text("host.cpus >= 1") == "true")
    }
}
