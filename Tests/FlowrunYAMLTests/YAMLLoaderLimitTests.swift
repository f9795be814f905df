import Foundation
import FlowrunYAML
import Testing

// MARK: - Limits and hostile input

@Suite struct YAMLLoaderLimitTests {
    @Test(arguments: [30_000, 1_000_000])
    func deepFlowNestingIsRefusedQuickly(depth: Int) {
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: depth)
        var result: YAMLLoadResult?
        let elapsed = ContinuousClock().measure { result = YAMLLoader().load(bytes: bytes) }
        #expect(elapsed < .milliseconds(300), "took \(elapsed)")
        #expect(result?.documents.isEmpty == true)
        #expect(result?.problems.map(\.description) == ["1:101: nesting is deeper than 100 levels"])
    }

    @Test func deepBlockNestingIsRefused() {
        let text = (0..<150).map { String(repeating: " ", count: $0 * 2) + "- \n" }.joined()
        let result = load(text)
        #expect(result.problems.map(\.description) == ["101:201: nesting is deeper than 100 levels"])
    }

    @Test func nestingAtTheLimitLoads() {
        let text = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(load(text).problems.isEmpty)
    }

    @Test func aFileOver16MiBIsRefusedWithoutReadingIt() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/huge.yaml"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: UInt8(ascii: "#"), count: 20_000_000)))

            var result: YAMLLoadResult?
            let elapsed = ContinuousClock().measure { result = YAMLLoader().load(path: path) }
            #expect(elapsed < .milliseconds(100), "took \(elapsed)")
            #expect(result?.documents.isEmpty == true)
            // The size comes from fstat: not one byte was read.
            #expect(result?.problems.map(\.description) == [
                "1:1: the file is larger than 16 MiB (20000000+ bytes); workflow files are limited to 16 MiB"
            ])
        }
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/zero"), "needs /dev/zero"))
    func readingAnEndlessFileStopsOneChunkPastTheLimit() throws {
        var limits = YAMLLimits()
        limits.maxBytes = 1_048_576
        #expect(throws: YAMLProblem(
            "the file is larger than 1 MiB (1114112+ bytes); workflow files are limited to 1 MiB", at: .start)
        ) {
            try YAMLInput.read(path: "/dev/zero", limits: limits)
        }
    }

    @Test func tooManyBytesInMemoryAreRefused() {
        var limits = YAMLLimits()
        limits.maxBytes = 2 * 1_048_576
        let result = YAMLLoader(limits: limits).load(bytes: [UInt8](repeating: UInt8(ascii: "#"), count: limits.maxBytes + 1))
        #expect(result.problems.map(\.description) == [
            "1:1: the file is larger than 2 MiB (2097153+ bytes); workflow files are limited to 2 MiB"
        ])
    }

    @Test func aMissingFileIsAProblemNotACrash() {
        let result = YAMLLoader().load(path: "/nonexistent/flowrun.yaml")
        #expect(result.problems.map(\.description) == ["1:1: cannot open: No such file or directory"])
    }

    @Test func aDirectoryIsRefused() throws {
        try withTemporaryFolder { folder in
            #expect(YAMLLoader().load(path: folder).problems.map(\.description) == ["1:1: is a directory, not a workflow file"])
        }
    }

    @Test func nonUTF8BytesAreRefusedAtTheBadByte() {
        let bytes = Array("tasks:\n  größe: ".utf8) + [0xFF, 0x41] + Array("\n".utf8)
        let result = YAMLLoader().load(bytes: bytes)
        #expect(result.documents.isEmpty)
        #expect(result.problems.map(\.description) == [
            "2:10: the file is not UTF-8 text (byte 0xFF cannot start or continue a character here); save it as UTF-8"
        ])
    }

    @Test(arguments: [
        [0xC0, 0x80],  // an overlong NUL
        [0xED, 0xA0, 0x80],  // a UTF-16 surrogate
        [0xF4, 0x90, 0x80, 0x80],  // past U+10FFFF
        [0xE2, 0x82],  // cut short by the end
    ] as [[UInt8]])
    func invalidUTF8FormsAreRefused(sequence: [UInt8]) {
        let result = YAMLLoader().load(bytes: Array("a: ".utf8) + sequence)
        #expect(result.problems.map(\.mark) == [Mark(line: 1, column: 4)])
        #expect(result.problems.first?.message.hasPrefix("the file is not UTF-8 text") == true)
    }

    @Test(arguments: [("UTF-16LE", [0xFF, 0xFE] as [UInt8], String.Encoding.utf16LittleEndian), ("UTF-16BE", [0xFE, 0xFF], .utf16BigEndian)])
    func aUTF16FileIsRefused(name: String, byteOrderMark: [UInt8], encoding: String.Encoding) throws {
        try withTemporaryFolder { folder in
            let path = folder + "/\(name).yaml"
            let body = try #require("tasks:\n  build: make\n".data(using: encoding))
            #expect(FileManager.default.createFile(atPath: path, contents: Data(byteOrderMark) + body))
            let result = YAMLLoader().load(path: path)
            #expect(result.documents.isEmpty)
            #expect(result.problems.map(\.description) == ["1:1: the file is UTF-16 text (it starts with a byte order mark); save it as UTF-8"])
        }
    }

    @Test func aUTF8ByteOrderMarkIsAccepted() throws {
        let result = YAMLLoader().load(bytes: [0xEF, 0xBB, 0xBF] + Array("a: 1\n".utf8))
        #expect(result.problems.isEmpty)
        #expect(result.documents.map(render) == ["{a: 1}"])
    }

    @Test func controlCharactersAreRefusedAtTheirPosition() {
        let result = load("a: b\nc: x\u{01}y\n")
        #expect(result.problems.map(\.description) == ["2:5: control characters are not allowed (found U+0001)"])
    }

    @Test func tabsUsedForIndentationAreRefusedByLibyaml() {
        let result = load("tasks:\n\tbuild: make\n")
        #expect(result.documents.isEmpty)
        #expect(result.problems.map(\.description) == [
            "2:1: a tab cannot indent YAML; indent with spaces (found character that cannot start any token (while scanning for the next token))"
        ])
    }
}

// MARK: - Random input

@Suite struct YAMLLoaderRandomInputTests {
    /// Bytes from YAML's syntax characters, so inputs reach deep into the parser.
    static let yamlish = Array("[]{}:-?,&*!|>'\"#%@`~ \n\n\t\\abc01<<.".utf8)

    @Test func randomBytesNeverCrashAndProblemsHaveMarks() {
        var generator = SeededGenerator(state: 0x5EED_F10E)
        let loader = YAMLLoader(allowsMultipleDocuments: true)
        let seedDocuments = [
            "a: &a { x: 1 }\nb: { <<: *a, y: [1, 2, *a] }\n",
            "- !!str x\n- |\n  text\n- >-\n  folded\n",
            "%YAML 1.2\n--- &r\n? [k]\n: v\n...\n",
        ].map { Array($0.utf8) }
        for round in 0..<600 {
            var bytes: [UInt8]
            switch round % 3 {
            case 0:  // raw bytes
                bytes = (0..<Int.random(in: 0...256, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            case 1:  // YAML-ish noise
                bytes = (0..<Int.random(in: 0...256, using: &generator)).map { _ in Self.yamlish.randomElement(using: &generator)! }
            default:  // a real document, mutated
                bytes = seedDocuments[round % seedDocuments.count]
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    bytes[index] = Bool.random(using: &generator)
                        ? Self.yamlish.randomElement(using: &generator)!
                        : UInt8.random(in: 0...255, using: &generator)
                }
            }
            let result = loader.load(bytes: bytes)
            for problem in result.problems {
                #expect(problem.mark.line >= 1 && problem.mark.column >= 1, "round \(round): \(problem)")
            }
        }
    }
}
