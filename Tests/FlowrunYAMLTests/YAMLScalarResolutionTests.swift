import FlowrunYAML
import Testing

@Suite struct YAMLScalarResolutionTests {
    @Test(arguments: [
        ("true", true), ("True", true), ("TRUE", true), ("false", false), ("False", false), ("FALSE", false),
    ])
    func coreSchemaBooleans(text: String, value: Bool) {
        #expect(YAMLScalar(text).bool == value)
        #expect(YAMLScalar(text, style: .doubleQuoted).bool == nil)
    }

    @Test(arguments: ["yes", "no", "on", "off", "y", "tRUE", ""])
    func yaml11BooleansStayStrings(text: String) {
        #expect(YAMLScalar(text).bool == nil)
    }

    @Test(arguments: [("0", 0), ("12", 12), ("-3", -3), ("+4", 4), ("007", 7), ("0o17", 15), ("0x1F", 31), ("0xff", 255)])
    func coreSchemaIntegers(text: String, value: Int) {
        #expect(YAMLScalar(text).int == value)
        #expect(YAMLScalar(text).double == Double(value))
        #expect(YAMLScalar(text, style: .singleQuoted).int == nil)
    }

    @Test(arguments: ["0x", "0x-1", "0x+F", "0o8", "0o", "1_000", "+", "-", "1.0", "１２", "12abc", "0b101", " 1"])
    func notIntegers(text: String) {
        #expect(YAMLScalar(text).int == nil)
    }

    @Test(arguments: [
        ("1.5", 1.5), (".5", 0.5), ("-.5", -0.5), ("5.", 5), ("1e3", 1000), ("1.5E-2", 0.015), ("+2.5e+1", 25),
        ("99999999999999999999", 1e20), (".inf", .infinity), ("-.Inf", -.infinity),
    ])
    func coreSchemaFloats(text: String, value: Double) {
        #expect(YAMLScalar(text).double == value)
    }

    @Test func notANumberIsNaN() {
        #expect(YAMLScalar(".nan").double?.isNaN == true)
    }

    @Test(arguments: [".", "1e", "e5", ".e5", "1.2.3", "1e5.5", "inf", "nan", "0x1p3", "1,5", "--1", "1-2"])
    func notFloats(text: String) {
        #expect(YAMLScalar(text).double == nil)
    }

    @Test(arguments: ["", "~", "null", "Null", "NULL"])
    func coreSchemaNulls(text: String) {
        #expect(YAMLScalar(text).isNull)
        #expect(!YAMLScalar(text, style: .doubleQuoted).isNull)
    }
}
