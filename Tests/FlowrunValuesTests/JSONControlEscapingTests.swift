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

/// Strings with escapes are read into one byte buffer (linear in their
/// length): what they decode to, invalid UTF-8 beside an escape included,
/// is as when each run between escapes was decoded on its own.
@Suite struct JSONStringEscapeReadingTests {
    @Test(arguments: [
        ([0x22, 0x61, 0x5C, 0x75, 0x30, 0x30, 0x65, 0x39, 0x5C, 0x6E, 0x5C, 0x75, 0x64, 0x38, 0x33, 0x64, 0x5C, 0x75, 0x64, 0x65, 0x30, 0x30, 0x62, 0x22] as [UInt8], "a\u{E9}\n\u{1F600}b"),
        ([0x22, 0xE2, 0x5C, 0x6E, 0x82, 0x22], "\u{FFFD}\n\u{FFFD}"),  // a cut sequence, an escape, a lone continuation
        ([0x22, 0xE2, 0x82, 0x5C, 0x75, 0x30, 0x30, 0x38, 0x32, 0x22], "\u{FFFD}\u{82}"),
        ([0x22, 0x5C, 0x5C, 0x5C, 0x22, 0x22], "\\\""),
    ])
    func escapesAndInvalidBytesReadAsBefore(_ bytes: [UInt8], _ expected: String) {
        guard case .string(let read)? = JSONValue.parse(bytes: bytes) else {
            Issue.record("\(bytes) does not parse as a JSON string")
            return
        }
        #expect(Array(read.unicodeScalars) == Array(expected.unicodeScalars))
    }

    @Test func aLongStringOfEscapesReadsWhole() {
        var text = "\""
        for line in 1...200_000 { text += "\(line)\\n" }
        text += "\""
        guard case .string(let read)? = JSONValue.parse(text) else {
            Issue.record("does not parse")
            return
        }
        #expect(read.utf8.count == text.utf8.count - 2 - 200_000)
        #expect(read.hasSuffix("199999\n200000\n"))
    }
}
