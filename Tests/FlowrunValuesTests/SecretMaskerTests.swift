@testable import FlowrunModel
@testable import FlowrunValues
import Testing

/// The masker must hide every secret exactly, whatever the chunking of the
/// output it sees, and leave everything else as it was.
@Suite struct SecretMaskerTests {
    /// `text` fed to a stream in the given pieces, flushed at the end.
    static func streamed(_ pieces: [String], masker: SecretMasker) -> String {
        let stream = masker.stream()
        var output: [UInt8] = []
        for piece in pieces {
            var piece = piece
            piece.withUTF8 { stream.write(UnsafeRawBufferPointer($0)) { output.append(contentsOf: $0) } }
        }
        stream.finish { output.append(contentsOf: $0) }
        return String(decoding: output, as: UTF8.self)
    }

    @Test func masksEveryOccurrenceInAWholeText() throws {
        let masker = try #require(SecretMasker(values: ["hunter22"]))
        #expect(masker.mask("pw=hunter22; again hunter22!") == "pw=***; again ***!")
        #expect(masker.mask("hunter2 is not it") == "hunter2 is not it")
        #expect(masker.mask("") == "")
    }

    @Test func nothingToMaskWithoutValues() {
        #expect(SecretMasker(values: []) == nil)
        #expect(SecretMasker(values: ["", ""]) == nil)
    }

    /// Two chunks, split at every offset of the text: the result is the same
    /// as masking the whole text, and no secret byte run leaks.
    @Test(arguments: ["s3cr3t-value", "abab", "aaaa"])
    func chunkBoundaryAtEveryOffset(secret: String) throws {
        let masker = try #require(SecretMasker(values: [secret]))
        let text = "before \(secret) mid \(secret)\(secret) x\(secret.dropLast()) end \(secret)"
        let expected = masker.mask(text)
        #expect(!expected.contains(secret))
        let bytes = Array(text.utf8)
        for cut in 0...bytes.count {
            for secondCut in cut...bytes.count {
                let pieces = [bytes[..<cut], bytes[cut..<secondCut], bytes[secondCut...]].map { String(decoding: $0, as: UTF8.self) }
                #expect(Self.streamed(pieces, masker: masker) == expected, "cuts at \(cut), \(secondCut)")
            }
        }
    }

    @Test func oneByteAtATime() throws {
        let masker = try #require(SecretMasker(values: ["abcdef", "token-123"]))
        let text = "x abcdef y token-123 z abcde token-12"
        #expect(Self.streamed(text.map(String.init), masker: masker) == "x *** y *** z abcde token-12")
    }

    @Test func onlyBytesThatMayStartASecretAreHeldBack() throws {
        let masker = try #require(SecretMasker(values: ["secret"]))
        let stream = masker.stream()
        var output: [UInt8] = []
        var text = "plain output, then sec"
        text.withUTF8 { stream.write(UnsafeRawBufferPointer($0)) { output.append(contentsOf: $0) } }
        #expect(String(decoding: output, as: UTF8.self) == "plain output, then ")
        stream.finish { output.append(contentsOf: $0) }
        #expect(String(decoding: output, as: UTF8.self) == "plain output, then sec")
    }

    @Test func overlappingSecretsHideTheWholeStretch() throws {
        let masker = try #require(SecretMasker(values: ["abcd", "cdef", "abcdefgh"]))
        #expect(masker.mask("[abcdef]") == "[***]")
        #expect(masker.mask("[abcdefgh]") == "[***]")
        #expect(masker.mask("[xxcdefab]") == "[xx***ab]")
        #expect(masker.mask("[abcdabcd]") == "[******]")
        for cut in 0...8 {
            let text = Array("[abcdef]".utf8)
            let pieces = [String(decoding: text[..<cut], as: UTF8.self), String(decoding: text[cut...], as: UTF8.self)]
            #expect(Self.streamed(pieces, masker: masker) == "[***]", "cut at \(cut)")
        }
    }

    @Test func longestSecretFirstAtOnePosition() throws {
        let masker = try #require(SecretMasker(values: ["pass", "password-1"]))
        #expect(masker.mask("a password-1 b pass c passw") == "a *** b *** c ***w")
        #expect(Self.streamed(["a passw", "ord-1 b"], masker: masker) == "a *** b")
    }

    @Test func multiLineSecretsWholeAndLineByLine() throws {
        let key = "-----BEGIN KEY-----\nMIIEvQIBADANBg\r\nkqhkiG9w0BAQEF\n-----END KEY-----"
        let masker = try #require(SecretMasker(values: [key]))
        #expect(masker.mask("key:\n\(key)\ndone") == "key:\n***\ndone")
        // One line at a time (another line break): each line is masked.
        #expect(masker.mask("MIIEvQIBADANBg\nkqhkiG9w0BAQEF\n") == "***\n***\n")
        let text = Array("x\(key)y".utf8)
        for cut in 0...text.count {
            let pieces = [String(decoding: text[..<cut], as: UTF8.self), String(decoding: text[cut...], as: UTF8.self)]
            #expect(Self.streamed(pieces, masker: masker) == "x***y", "cut at \(cut)")
        }
    }

    @Test func jsonStringsAreMaskedHoweverEscaped() throws {
        let masker = try #require(SecretMasker(values: ["line1\nline2\"q\"", "é-secret", "1234"]))
        let json = #"{"a":"x line1\nline2\"q\" y","b":"\u00e9-secret","n":12345,"c":"1234"}"#
        #expect(masker.maskJSON(json) == #"{"a":"x *** y","b":"***","n":12345,"c":"***"}"#)
        // Text without secrets comes back as it was, byte for byte.
        let plain = #"{"a":"\/ \u0041","n":1}"#
        #expect(masker.maskJSON(plain) == plain)
    }

    @Test func randomisedAgainstANaiveMasker() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab\n".utf8)
        for _ in 0..<300 {
            let secrets = (0..<Int.random(in: 1...3, using: &generator)).map { _ in
                String(decoding: (0..<Int.random(in: 4...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
            }.filter { !$0.contains("\n") }
            guard let masker = SecretMasker(values: secrets) else { continue }
            let text = Array((0..<Int.random(in: 0...60, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let whole = masker.mask(String(decoding: text, as: UTF8.self))
            #expect(whole == Self.naive(text, secrets: secrets.map { Array($0.utf8) }), "\(secrets) in \(text)")
            var pieces: [String] = []
            var start = 0
            while start < text.count {
                let end = min(text.count, start + Int.random(in: 1...7, using: &generator))
                pieces.append(String(decoding: text[start..<end], as: UTF8.self))
                start = end
            }
            #expect(Self.streamed(pieces, masker: masker) == whole)
        }
    }

    /// Marks every byte any secret covers, then writes `***` per covered stretch
    /// (stretches that overlap merge; ones that only touch do not).
    static func naive(_ text: [UInt8], secrets: [[UInt8]]) -> String {
        var stretches: [(start: Int, end: Int)] = []
        for start in text.indices {
            let longest = secrets.filter { start + $0.count <= text.count && Array(text[start..<(start + $0.count)]) == $0 }.map(\.count).max()
            guard let longest else { continue }
            if let last = stretches.last, start < last.end {
                stretches[stretches.count - 1].end = max(last.end, start + longest)
            } else {
                stretches.append((start, start + longest))
            }
        }
        var output: [UInt8] = []
        var position = 0
        for stretch in stretches {
            output += text[position..<stretch.start]
            output += Array("***".utf8)
            position = stretch.end
        }
        output += text[position...]
        return String(decoding: output, as: UTF8.self)
    }
}
