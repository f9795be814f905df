import Testing
@testable import FlowrunModel

/// A script's scan is kept for the next template with the same text (a
/// fan-out's members), and only for that text; the store stays bounded.
@Suite struct ScannedScriptsTests {
    static let here = SourceLocation(file: "w.yaml", line: 1, column: 1)

    static func segments(_ parts: [String?]) -> [Template.Segment] {
        parts.map { $0.map(Template.Segment.text) ?? .expression(.string("x"), here) }
    }

    @Test func aScriptScannedAgainGetsTheSamePointsAndAnotherTextItsOwn() {
        let quoted = Self.segments(["echo \"", nil, "\" ", nil])
        let first = ShellContextScanner.insertionPoints(in: quoted)
        #expect(first.map(\.insertion) == [.doubleQuoted, .word])
        #expect(ShellContextScanner.insertionPoints(in: quoted) == first)
        // The same length and markers, another context: never the kept one.
        let single = Self.segments(["echo '", nil, "' ", nil])
        #expect(ShellContextScanner.insertionPoints(in: single).map(\.insertion) == [.singleQuoted, .word])
    }

    @Test func theStoreKeepsAtMostItsCapacity() {
        let store = ScannedScripts()
        for number in 0..<(ScannedScripts.capacity * 3) {
            store.keep([], for: Array("echo \(number)".utf8))
            #expect(store.count <= ScannedScripts.capacity)
        }
        #expect(store.points(for: Array("echo \(ScannedScripts.capacity * 3 - 1)".utf8)) == [])
    }
}
