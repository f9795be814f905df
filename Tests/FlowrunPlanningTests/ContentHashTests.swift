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

    /// Both ways: the CPU's SHA instructions where it has them, and word by word.
    @Test(arguments: [false, true])
    func sha256OfAMillionAsFedInUnevenPiecesMatches(portable: Bool) {
        var sha = SHA256(portable: portable)
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

    /// The CPU's compression and this file's give the same digest for every
    /// length around the block and padding edges, fed whole and in pieces.
    /// On a CPU without the SHA extensions there is nothing to compare: said, not failed.
    @Test func theCPUsCompressionAndThePortableOneAgree() {
        guard SHA256.hasHardware else {
            print("ContentHashTests: this CPU has no SHA extensions; only the portable compression runs here")
            return
        }
        var generator = SeededGenerator(seed: 37)
        for length in Array(0...300) + [1_000, 4_095, 4_096, 65_537] {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            var hardware = SHA256(), portable = SHA256(portable: true), pieces = SHA256()
            hardware.update(bytes)
            portable.update(bytes)
            var offset = 0
            while offset < length {
                let count = min(length - offset, Int(generator.next() % 150) + 1)
                pieces.update(Array(bytes[offset..<offset + count]))
                offset += count
            }
            let expected = portable.finalize()
            #expect(hardware.finalize() == expected, "length \(length)")
            #expect(pieces.finalize() == expected, "length \(length), in pieces")
        }
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
