import FlowrunLoading
import FlowrunModel
import Testing

/// `DotenvLoader.parse`: the lines Docker Compose and just read, and the
/// ones they refuse, at their line.
@Suite struct DotenvParsingTests {
    static func pairs(_ text: String) -> [String] {
        DotenvLoader.parse(text, file: ".env").values.map { "\($0.name)=\($0.value)" }
    }

    @Test func quotesCommentsAndExportAreReadAsComposeReadsThem() {
        #expect(Self.pairs("# c\n\nexport A=1\nB = two words  # note\nC='$X \\n'\nD=\"a\\tb\\\"\\$\"\nE=x#y\n") == [
            "A=1", "B=two words", "C=$X \\n", "D=a\tb\"$", "E=x#y",
        ])
    }

    @Test func aQuotedValueMaySpanLines() {
        #expect(Self.pairs("KEY=\"first\nsecond\"\nNEXT=1\r\n") == ["KEY=first\nsecond", "NEXT=1"])
    }

    @Test func aBadLineIsAnErrorAtItsLine() {
        let loaded = DotenvLoader.parse("A=1\n  no pair\n9X=2\nQ='open\n", file: ".env")
        #expect(loaded.values.map(\.name) == ["A"])
        #expect(loaded.diagnostics.map { "\($0.location.line):\($0.location.column)" } == ["2:3", "3:1", "4:1"])
    }
}
