@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunEngine
import FlowrunTestSupport
import Foundation
import Testing

@Suite struct RuntimeValuesFanOutItemsTests {
    @Test(arguments: [
        (#"["a", "b c"]"#, ["a", "b c"]),
        (#"[1, 1.50, -0, 1e5, 1E+5, 0.5e-3, 12345678901234567890, true, false, null]"#,
         ["1", "1.50", "-0", "1e5", "1E+5", "0.5e-3", "12345678901234567890", "true", "false", "null"]),
        (#"[{"b": 1, "a": [1, {"c": null}]}, [], {}, [[]]]"#, [#"{"b":1,"a":[1,{"c":null}]}"#, "[]", "{}", "[[]]"]),
        (#"[{"k": "x\"y\n\u0001é"}]"#, [#"{"k":"x\"y\n\u0001é"}"#]),
        (#"["\u00e9\n\"\\\/\b\f\r\t", "\ud83d\ude00", "é😀"]"#, ["é\n\"\\/\u{08}\u{0C}\r\t", "😀", "é😀"]),
        ("[]", []),
        (" \n [ \"a\" ] \r\n\t", ["a"]),
        (#"["", " "]"#, ["", " "]),
        (#"[{"dup": 1, "dup": 2}]"#, [#"{"dup":1,"dup":2}"#]),
    ] as [(String, [String])])
    func aJSONArrayGivesItsElements(text: String, items: [String]) {
        #expect(FanOutItems.parse(text) == items)
    }

    @Test(arguments: [
        ("eu\nus\nap", ["eu", "us", "ap"]),
        ("a\r\nb\r\n", ["a", "b"]),
        ("\n\n  \n\t\nx\n\n", ["x"]),
        (" lead and trail  \nin ner", [" lead and trail  ", "in ner"]),
        ("a\rb\n", ["a\rb"]),
        ("", []),
        ("[1, 2", ["[1, 2"]),
        ("[1,]", ["[1,]"]),
        ("[01]", ["[01]"]),
        ("[a, b]", ["[a, b]"]),
        ("['a']", ["['a']"]),
        ("[NaN]", ["[NaN]"]),
        ("[\"a\"] x", ["[\"a\"] x"]),
        ("[\"tab\there\"]", ["[\"tab\there\"]"]),  // a raw control character is not JSON
        (#"["\ud800"]"#, [#"["\ud800"]"#]),  // nor is a lone surrogate
        (#"["\x"]"#, [#"["\x"]"#]),
        ("{\"a\": 1}", ["{\"a\": 1}"]),
        ("\"just a string\"", ["\"just a string\""]),
        ("42", ["42"]),
        ("[\n  1,\n  2\n", ["[", "  1,", "  2"]),
    ] as [(String, [String])])
    func otherTextGivesOneItemPerNonBlankLine(text: String, items: [String]) {
        #expect(FanOutItems.parse(text) == items)
    }

    @Test func nestingIsBounded() {
        let ok = String(repeating: "[", count: JSONValue.maxDepth) + String(repeating: "]", count: JSONValue.maxDepth)
        #expect(FanOutItems.parse("[" + ok + "]").count == 1)
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(FanOutItems.parse(deep) == [deep])
    }

    /// Compact JSON text reads back as the same document, by our reader and by Foundation's.
    @Test func compactTextIsValidJSON() throws {
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<500 {
            // Foundation's reader on Linux drops U+FEFF inside strings, so it cannot judge those.
            let strings = (0..<3).map { _ in randomHostileString(using: &generator).replacing("\u{FEFF}", with: "") }
            let value = JSONValue.array([
                .string(strings[0]),
                .object([.init(key: strings[1], value: .array([.number("-1.5e3"), .bool(true), .null, .string(strings[2])]))]),
            ])
            let text = value.compactText
            #expect(JSONValue.parse(text) == value)
            let foundation = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as? [Any])
            #expect(foundation.first as? String == strings[0])
            let object = try #require(foundation.last as? [String: Any])
            #expect(((object[strings[1]] as? [Any])?.last as? String) == strings[2])
        }
    }

    // MARK: groups.G.results

    @Test func groupResultsAreCompactJSONInMemberOrder() {
        let json = GroupResults.json([
            .init(name: "thumbs[0]", item: "a.png", status: .succeeded, stdout: "ok", outputs: [(key: "w", value: "10"), (key: "h", value: "2")]),
            .init(name: "thumbs[1]", item: "b \"q\".png", status: .timedOut, stdout: "line\n\ttab\u{1}", outputs: []),
            .init(name: "static", item: nil, status: .skipped, stdout: "", outputs: []),
        ])
        #expect(json == #"""
            [{"name":"thumbs[0]","item":"a.png","status":"succeeded","stdout":"ok","outputs":{"w":"10","h":"2"}},\#
            {"name":"thumbs[1]","item":"b \"q\".png","status":"timed_out","stdout":"line\n\ttab\u0001","outputs":{}},\#
            {"name":"static","item":null,"status":"skipped","stdout":"","outputs":{}}]
            """#)
        #expect(GroupResults.json([]) == "[]")
        #expect(GroupResults.value([]) == .json("[]"))
    }

    @Test func groupResultsFeedAFanOut() {
        let json = GroupResults.json([.init(name: "a", item: "x", status: .failed, stdout: "", outputs: [])])
        #expect(FanOutItems.parse(json) == [#"{"name":"a","item":"x","status":"failed","stdout":"","outputs":{}}"#])
    }
}
