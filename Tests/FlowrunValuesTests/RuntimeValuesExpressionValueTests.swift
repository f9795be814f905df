@testable import FlowrunModel
@testable import FlowrunValues
import FlowrunTestSupport
import Testing

@Suite struct RuntimeValuesExpressionValueTests {
    // MARK: Text

    @Test(arguments: [
        (0.0, "0"), (-0.0, "0"), (1, "1"), (-3, "-3"), (1.5, "1.5"), (0.1, "0.1"), (-2.5e-3, "-0.0025"),
        (1e-5, "0.00001"), (1.25e-7, "0.000000125"), (123456.789, "123456.789"), (0.30000000000000004, "0.30000000000000004"),
        (1e17, "100000000000000000"), (1e18, "1000000000000000000"), (1.5e20, "150000000000000000000"),
        (-1.5e20, "-150000000000000000000"), (9007199254740994, "9007199254740994"), (.leastNonzeroMagnitude, "0." + String(repeating: "0", count: 323) + "5"),
        (.nan, "NaN"), (.infinity, "Infinity"), (-.infinity, "-Infinity"),
    ] as [(Double, String)])
    func numbersPrintAsWrittenInPlainDecimal(number: Double, text: String) {
        #expect(ExpressionValue.number(number).text == text)
    }

    @Test func numberTextReadsBackAsTheSameNumber() {
        var generator = SeededGenerator(seed: 1)
        for _ in 0..<20_000 {
            let number = Double(bitPattern: generator.next())
            guard number.isFinite else { continue }
            let text = ExpressionValue.number(number).text
            #expect(!text.contains("e") && !text.hasSuffix(".0"), "\(number) → \(text)")
            #expect(Double(text) == number, "\(number) → \(text)")
        }
    }

    @Test func otherValuesPrintAsTheyAre() {
        #expect(ExpressionValue.boolean(true).text == "true")
        #expect(ExpressionValue.boolean(false).text == "false")
        #expect(ExpressionValue.string(" a 'b'\n").text == " a 'b'\n")
        #expect(ExpressionValue.json(#"[{"a":1}]"#).text == #"[{"a":1}]"#)
    }

    // MARK: Reading text as a number

    @Test(arguments: [
        ("0", 0), (" 42\n", 42), ("\t-1.5\r\n", -1.5), ("+7", 7), ("1e3", 1000), ("1E-2", 0.01), ("-0", 0), ("007", 7),
        ("", nil), (" ", nil), ("0x10", nil), ("1.", nil), (".5", nil), ("nan", nil), ("inf", nil), ("infinity", nil),
        ("1_000", nil), ("1,5", nil), ("12abc", nil), ("1e999", nil), ("--1", nil), ("1 2", nil), ("e3", nil), ("1e", nil),
        ("٣", nil), ("１", nil), ("true", nil),
    ] as [(String, Double?)])
    func textReadsAsANumberOnlyInPlainDecimal(text: String, number: Double?) {
        #expect(ExpressionValue.string(text).numericValue == number)
    }

    @Test func booleansNeverReadAsNumbers() {
        #expect(ExpressionValue.boolean(true).numericValue == nil)
        #expect(ExpressionValue.boolean(false).numericValue == nil)
    }

    // MARK: Truthiness

    @Test(arguments: [
        (ExpressionValue.boolean(false), false), (.boolean(true), true),
        (.number(0), false), (.number(-0.0), false), (.number(.nan), false), (.number(0.5), true), (.number(-1), true),
        (.string(""), false), (.string(" \n"), false), (.string("false"), false), (.string("False"), false),
        (.string("FALSE\n"), false), (.string("0"), false), (.string("0.0"), false), (.string("-0"), false),
        (.string(" 0\r\n"), false), (.string("1"), true), (.string("true"), true), (.string("no"), true),
        (.string("off"), true), (.string("null"), true), (.string("falsey"), true), (.string("0x0"), true),
        (.string("f a l s e"), true), (.json("[]"), true), (.json(""), false),
    ])
    func truthiness(value: ExpressionValue, isTrue: Bool) {
        #expect(value.isTrue == isTrue)
    }

    // MARK: Comparison

    @Test(arguments: [
        // Numbers on both sides compare numerically, whatever their form.
        (ExpressionValue.string("0"), BinaryOperator.equal, ExpressionValue.number(0), true),
        (.string("0.0"), .equal, .string("-0"), true),
        (.string(" 3\n"), .equal, .number(3), true),
        (.string("1e3"), .equal, .number(1000), true),
        (.string("10"), .greater, .string("9"), true),
        (.string("10"), .less, .number(9), false),
        (.number(2), .lessOrEqual, .number(2), true),
        (.number(2), .greaterOrEqual, .string("2.5"), false),
        (.string("1.10"), .equal, .string("1.1"), true),  // the documented caveat
        // Otherwise text, byte by byte.
        (.string("abc"), .equal, .string("abc"), true),
        (.string("abc"), .equal, .string("ABC"), false),
        (.string("abc"), .notEqual, .string("abc "), true),
        (.string("é"), .equal, .string("e\u{301}"), false),  // no Unicode normalisation
        (.string("B"), .less, .string("a"), true),  // C locale order
        (.string("2024-01-31"), .less, .string("2024-02-01"), true),
        (.string("1.2.10"), .less, .string("1.2.9"), true),  // text, not versions
        (.string("10"), .less, .string("9x"), true),  // one side is not a number
        (.string(""), .equal, .number(0), false),
        (.string(""), .less, .string("a"), true),
        (.string("z"), .greaterOrEqual, .string("z"), true),
        // Booleans compare as their text.
        (.boolean(true), .equal, .string("true"), true),
        (.boolean(true), .equal, .boolean(true), true),
        (.boolean(false), .notEqual, .boolean(true), true),
        (.boolean(true), .equal, .number(1), false),
        (.boolean(false), .equal, .string("0"), false),
        // JSON is text.
        (.json("[]"), .equal, .string("[]"), true),
    ])
    func comparisons(left: ExpressionValue, op: BinaryOperator, right: ExpressionValue, expected: Bool) {
        #expect(ExpressionValue.compare(left, op, right) == expected)
    }

    @Test func theSixComparisonsAgreeWithEachOther() {
        let values: [ExpressionValue] = [
            .string(""), .string("0"), .string("00"), .string("1"), .string("10"), .string("9"), .string("a"), .string("A"),
            .string("é"), .number(0), .number(1.5), .number(-2), .boolean(true), .boolean(false), .json("[1]"),
        ]
        for a in values {
            for b in values {
                let less = ExpressionValue.compare(a, .less, b), equal = ExpressionValue.compare(a, .equal, b)
                let greater = ExpressionValue.compare(a, .greater, b)
                #expect([less, equal, greater].filter { $0 }.count == 1, "\(a) vs \(b)")
                #expect(ExpressionValue.compare(a, .notEqual, b) == !equal)
                #expect(ExpressionValue.compare(a, .lessOrEqual, b) == (less || equal))
                #expect(ExpressionValue.compare(a, .greaterOrEqual, b) == (greater || equal))
                #expect(ExpressionValue.compare(b, .greater, a) == less, "\(a) vs \(b) is not antisymmetric")
            }
        }
    }
}
