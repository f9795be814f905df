@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
import FlowrunTestSupport
import Testing

/// SHA-256 against the FIPS 180-4 examples, and the glob matcher's rules.
@Suite struct ContentHashTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256MatchesTheStandardsVectors(_ input: String, _ digest: String) {
        #expect(SHA256.hex(input) == digest)
    }

    @Test func sha256OfAMillionAsFedInUnevenPiecesMatches() {
        var sha = SHA256()
        var left = 1_000_000
        var piece = 1
        while left > 0 {
            let count = min(piece, left)
            sha.update([UInt8](repeating: UInt8(ascii: "a"), count: count))
            left -= count
            piece = piece * 3 % 997 + 1
        }
        #expect(sha.finalize() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    func matches(_ pattern: String, _ name: String) throws -> Bool {
        let parsed = try GlobPattern.parse(pattern)
        guard case .wildcard(let tokens)? = parsed.segments.last else { return parsed.segments.last == .literal(Array(name.utf8)) }
        return Array(name.utf8).withUnsafeBufferPointer { GlobPattern.matches(tokens, $0) }
    }

    @Test func wildcardsMatchAsAShellDoes() throws {
        #expect(try matches("*.c", "main.c"))
        #expect(try !matches("*.c", "main.h"))
        #expect(try !matches("*.c", ".hidden.c"))
        #expect(try matches(".*", ".hidden"))
        #expect(try matches("unit?[0-9].c", "unit07.c"))
        #expect(try !matches("unit[!0-4]*.c", "unit3.c"))
        #expect(try matches("unit[!0-4]*.c", "unit5x.c"))
        #expect(try matches("a*b*c", "axxbyyc"))
        #expect(try !matches("a*b*c", "axxbyy"))
        #expect(try matches("\\*", "*"))
        #expect(try GlobPattern.parse("src/**/**/*.c").segments.count == 3)
    }

    @Test func badGlobsSayWhatIsWrongAndWhere() {
        #expect(throws: GlobPattern.Problem(message: "'[' is not closed: add ']' (or write '\\[' for the character)", offset: 4)) { try GlobPattern.parse("src/[ab") }
        #expect(throws: GlobPattern.Problem(message: "'**' must be a whole path segment, as in 'src/**/*.c'", offset: 1)) { try GlobPattern.parse("a**") }
        #expect(throws: GlobPattern.Problem(message: "the range 'z-a' is backwards", offset: 1)) { try GlobPattern.parse("[z-a]") }
        #expect(throws: GlobPattern.Problem(message: "a glob cannot be empty", offset: 0)) { try GlobPattern.parse("") }
    }
}
