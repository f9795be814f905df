import Testing
@testable import FlowrunValues

/// JSON flowrun writes reaches consoles as it is (`--output json`, `tail -f
/// events.jsonl`): no raw control character, C1 included (U+009B is a
/// one-byte CSI), and nothing else escaped.
@Suite struct JSONControlEscapingTests {
    @Test(arguments: [
        ("a\u{9B}2J", #""a\u009b2J""#),
        ("\u{80}\u{9F}", #""\u0080\u009f""#),
        ("end\u{9B}", #""end\u009b""#),
        ("\u{1B}[31m\u{7F}", #""\u001b[31m\u007f""#),
        ("¢ é \u{A0} 東京", "\"¢ é \u{A0} 東京\""),  // 0xC2 0xA2 and 0xC2 0xA0 are text, not C1
        ("tab\there\n", #""tab\there\n""#),
    ])
    func controlsAreEscapedAndTextIsNot(_ value: String, _ expected: String) {
        var bytes: [UInt8] = []
        JSONValue.appendQuoted(value, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == expected)
        guard case .string(let read)? = JSONValue.parse(expected) else {
            Issue.record("\(expected) does not parse as a JSON string")
            return
        }
        #expect(read == value, "what is written reads back as the value")
    }

    /// What Foundation's encoder wrote (the dry run's and `list`'s JSON) gets the same escapes.
    @Test func encoderOutputGetsTheSameEscapes() {
        #expect(JSONText.escapingControls("{\"a\":\"x\u{9B}y\u{7F}\"}") == #"{"a":"x\u009by\u007f"}"#)
        #expect(JSONText.escapingControls("{\"a\":\"¢\"}") == "{\"a\":\"¢\"}")
    }
}
