@testable import FlowrunModel
@testable import FlowrunValues
import FlowrunTestSupport
import Testing

@Suite struct RuntimeValuesEvaluatorTests {
    let context = ExpressionValues([
        .task("a", .exitCode): .number(0),
        .task("a", .status): .string("succeeded"),
        .task("a", .stdout): .string("hello world"),
        .task("a", .output("count")): .string("0"),
        .task("a", .output("deploy")): .string("false"),
        .task("b", .exitCode): .number(2),
        .task("b", .duration): .number(1.5),
        .join("j", .timedOut): .boolean(false),
        .join("j", .succeeded): .number(2),
        .group("g", .results): .json("[]"),
        .variable("mode"): .string("dry"),
        .item: .string("eu"),
        .index: .number(3),
    ])

    func evaluate(_ text: String) throws -> ExpressionValue {
        ExpressionEvaluator.evaluate(try runtimeExpression(text), in: context)
    }

    @Test(arguments: [
        ("tasks.a.exit_code == 0", true),
        ("tasks.a.outputs.count == 0", true),
        ("tasks.a.outputs.count == '0'", true),
        ("tasks.a.outputs.deploy", false),
        ("tasks.a.outputs.deploy == 'false'", true),
        ("tasks.a.outputs.deploy == false", true),
        ("!joins.j.timed_out", true),
        ("joins.j.succeeded >= 2 || vars.force == 'yes'", true),
        ("tasks.a.status == 'succeeded' && tasks.b.exit_code != 0", true),
        ("tasks.b.exit_code > 1 && tasks.b.duration < 2", true),
        ("tasks.a.exit_code == 0 && !(vars.mode == 'dry')", false),
        ("item == 'eu' && index == 3", true),
        ("tasks.a.stdout", true),
        ("!tasks.a.stdout", false),
        ("'' || 0", false),
        ("!''", true),
        ("groups.g.results", true),
        ("groups.g.results == '[]'", true),
    ])
    func conditions(text: String, expected: Bool) throws {
        #expect(ExpressionEvaluator.isTrue(try runtimeExpression(text), in: context) == expected)
    }

    @Test func valuesPassThroughAndOperatorsYieldBooleans() throws {
        #expect(try evaluate("tasks.a.stdout") == .string("hello world"))
        #expect(try evaluate("tasks.b.duration") == .number(1.5))
        #expect(try evaluate("1.5") == .number(1.5))
        #expect(try evaluate("'it''s'") == .string("it's"))
        // && and || give an operand (GitHub's semantics; ExpressionFunctionsTests has the ternary).
        #expect(try evaluate("'x' && 'y'") == .string("y"))
        #expect(try evaluate("'x' || 'y'") == .string("x"))
        #expect(try evaluate("!0") == .boolean(true))
        #expect(try evaluate("1 < 2") == .boolean(true))
        #expect(try evaluate("index").text == "3")
    }

    @Test func aMissingValueReadsAsTheEmptyString() throws {
        #expect(try evaluate("tasks.a.outputs.never_written") == .string(""))
        #expect(try evaluate("tasks.a.outputs.never_written == ''") == .boolean(true))
        #expect(try evaluate("env.FLOWRUN_SURELY_UNSET") == .string(""))
        #expect(try evaluate("!tasks.list.stdout") == .boolean(true))
    }

    @Test func andAndOrShortCircuit() throws {
        let recorder = RecordingContext()
        _ = ExpressionEvaluator.evaluate(try runtimeExpression("true || tasks.a.stdout == 'x'"), in: recorder)
        _ = ExpressionEvaluator.evaluate(try runtimeExpression("false && tasks.b.stdout == 'x'"), in: recorder)
        #expect(recorder.paths.isEmpty)
        _ = ExpressionEvaluator.evaluate(try runtimeExpression("false || tasks.a.stdout == 'x'"), in: recorder)
        #expect(recorder.paths == [.task("a", .stdout)])
    }

    @Test func theDeepestAndLongestExpressionsTheParserAllows() throws {
        let deep = String(repeating: "(", count: 63) + "tasks.a.exit_code == 0" + String(repeating: ")", count: 63)
        #expect(try evaluate(deep) == .boolean(true))
        let long = Array(repeating: "tasks.a.exit_code == 0", count: 257).joined(separator: " && ")
        #expect(try evaluate(long) == .boolean(true))
        let negations = String(repeating: "!", count: 62) + "tasks.a.stdout"
        #expect(try evaluate(negations) == .boolean(true))
    }
}

/// Records what the evaluator reads (a class, so the test sees the reads afterwards).
private final class RecordingContext: ExpressionContext {
    var paths: [OperandPath] = []

    func value(of path: OperandPath) -> ExpressionValue? {
        paths.append(path)
        return nil
    }
}
