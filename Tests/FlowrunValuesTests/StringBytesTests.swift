import FlowrunValues
import Testing

/// Paths compared and sorted by their bytes, as Linux names files: two
/// Unicode normal forms of one name are two names.
@Suite struct StringBytesTests {
    static let composed = "caf\u{E9}.h"
    static let decomposed = "cafe\u{301}.h"

    @Test func sameBytesTellsNormalFormsApart() {
        #expect(Self.composed == Self.decomposed)  // Swift's canonical equivalence
        #expect(!Self.composed.hasSameBytes(as: Self.decomposed))
        #expect(Self.composed.hasSameBytes(as: "caf\u{E9}.h"))
        #expect("".hasSameBytes(as: ""))
        #expect(!"".hasSameBytes(as: "a"))
        // Long (native storage) and short (inline) strings alike.
        let long = String(repeating: "include/", count: 20) + "x.h"
        #expect(long.hasSameBytes(as: String(repeating: "include/", count: 20) + "x.h"))
        #expect(!long.hasSameBytes(as: String(repeating: "include/", count: 20) + "y.h"))
    }

    @Test func bytesPrecedeSortsAsTheCLocale() {
        let names = ["b", "a/b", "a", "B", "a.c", Self.decomposed, Self.composed, "", "ab"]
        let sorted = names.sorted { $0.bytesPrecede($1) }
        #expect(sorted == names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        #expect(sorted.first == "" && sorted[1] == "B")
        #expect(!"a".bytesPrecede("a"))
    }

    @Test func containsNULFindsTheByteAnywhere() {
        #expect(!"plain text".containsNUL)
        #expect("a\0b".containsNUL)
        #expect((String(repeating: "x", count: 100) + "\0").containsNUL)
        #expect(!"".containsNUL)
    }
}
