@testable import FlowrunModel
@testable import FlowrunPlanning
@testable import FlowrunExport
import FlowrunTestSupport
import FlowrunYAML
import Testing

/// The scalar emitter writes strings any YAML reader reads back unchanged.
@Suite struct ExportYAMLScalarEmitterTests {
    static let tricky: [String] = [
        "", " ", "plain", "alpine:3", "30", "-1", "0x1F", "1e3", "1_000", "1:20", ".inf", "true", "Yes", "no", "ON", "y", "N",
        "null", "~", "2001-12-14", "- item", "? key", "key: value", "a #comment", "#", "&anchor", "*alias", "!tag", "%YAML",
        "@at", "`tick", "{flow}", "[list]", "'single'", "\"double\"", "back\\slash", "tab\there", "line\nbreak",
        "  leading spaces\n  on every line\n", "trailing  \n", "\n\nblank lines first", "last line\n\n", "\u{07}bell \u{1B}esc \u{7F}del",
        "\u{85}next \u{A0}nbsp \u{2028}ls \u{2029}ps \u{FEFF}bom", "émoji 🎉 ünïcode", "{{workflow.name}}", "a\r\nwindows",
        "\t\tindented with tabs\n\tsecond", "end with backslash\\", "\\\n\\",
    ]

    @Test(arguments: tricky)
    func roundTripsThroughTheYAMLLoader(_ text: String) throws {
        for indent in [nil, "    "] as [String?] {
            let document = "key: " + YAMLScalarEmitter.scalar(text, indent: indent) + "\n"
            let loaded = YAMLLoader().load(bytes: Array(document.utf8))
            #expect(loaded.problems.isEmpty, "\(loaded.problems) in \(document)")
            let value = try #require(loaded.documents.first?.mapping?.first?.value.scalar, "\(document)")
            #expect(value.text == text, "\(document)")
            if value.style == .plain {
                #expect(value.bool == nil && value.double == nil && !value.isNull, "plain \(text) reads as a non-string")
            }
        }
    }

    @Test func plainOnlyWhenNothingCanMisreadIt() {
        #expect(YAMLScalarEmitter.scalar("build") == "build")
        #expect(YAMLScalarEmitter.scalar("/bin/sh") == "/bin/sh")
        #expect(YAMLScalarEmitter.scalar("30") == "\"30\"")
        #expect(YAMLScalarEmitter.scalar("yes") == "\"yes\"")
        #expect(YAMLScalarEmitter.scalar("alpine:3") == "\"alpine:3\"")
        #expect(YAMLScalarEmitter.scalar("a\nb") == "\"a\\nb\"")
        #expect(YAMLScalarEmitter.scalar("a\n b\n", indent: "  ") == "\"a\\n\\\n  \\ b\\n\"")
    }

    @Test func manifestsNestMapsAndListsInBlockStyle() {
        let value = ManifestValue.map([
            ("a", .list([.map([("name", .string("x")), ("value", .string("1"))]), .string("y")])),
            ("b", .map([])), ("c", .list([])), ("d", .int(3)), ("e", .bool(false)),
        ])
        #expect(value.yamlText == """
            a:
              - name: x
                value: "1"
              - "y"
            b: {}
            c: []
            d: 3
            e: false

            """)
    }
}
