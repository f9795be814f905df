@testable import FlowrunModel
@testable import FlowrunEngine
import Testing

/// How `flowrun watch` reads a fan-out template's globs whose items only the
/// run knows (SPEC §14): the literal text around the `${{ }}`.
@Suite struct WatchFanOutGlobTests {
    private static let location = SourceLocation(file: "w.yaml", line: 4, column: 7)

    /// `text` with each `@` an `${{ item }}`.
    private static func template(_ text: String) -> Template {
        let operand = Operand(text: "item", path: .item, location: location)
        var segments: [Template.Segment] = []
        for (position, part) in text.split(separator: "@", omittingEmptySubsequences: false).enumerated() {
            if position > 0 { segments.append(.expression(.operand(operand), location)) }
            if !part.isEmpty { segments.append(.text(String(part))) }
        }
        return Template(source: text.replacingOccurrences(of: "@", with: "${{ item }}"), segments: segments, location: location)
    }

    @Test func theLiteralPrefixEndsAtTheFirstExpression() {
        #expect(RunEngine.literalPrefix(Self.template("src/@.c")) == "src/")
        #expect(RunEngine.literalPrefix(Self.template("@/x.c")) == "")
        #expect(RunEngine.literalPrefix(Self.template("a/b-@/@.c")) == "a/b-")
        #expect(RunEngine.hasExpression(Self.template("src/@.c")))
        #expect(!RunEngine.hasExpression(Self.template("src/a.c")))
    }

    @Test func generatedFilesKeepTheTextBeforeTheFirstAndAfterTheLastExpression() {
        let ends = RunEngine.literalEnds(Self.template("build/@/@.o"))
        #expect(ends.prefix == "build/" && ends.suffix == ".o")
        let bare = RunEngine.literalEnds(Self.template("@"))
        #expect(bare.prefix.isEmpty && bare.suffix.isEmpty)
    }

    @Test func pathsJoinOntoTheBaseUnlessAbsolute() {
        #expect(RunEngine.joinedPath("", "src") == "src")
        #expect(RunEngine.joinedPath("sub", "src") == "sub/src")
        #expect(RunEngine.joinedPath("sub", "") == "sub")
        #expect(RunEngine.joinedPath("sub", "/abs") == "/abs")
    }
}
