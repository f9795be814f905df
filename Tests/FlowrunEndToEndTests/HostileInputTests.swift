import Foundation
import Testing

/// SPEC §8: a malformed, hostile or huge file gets a clear error at the
/// right line:column — never a crash, a hang or a memory blow-up.
///
/// Each case is written to a temporary file and given to `flowrun validate`,
/// which must exit 2 with exactly one diagnostic, `FILE:LINE:COLUMN: error:`
/// at the expected position, in well under a second and 100 MB. The bounds
/// guard against hangs and blow-ups; they are not benchmarks. Every run
/// prints a row (`grep '^hostile '`) so the numbers can be quoted.
@Suite(.serialized)
struct HostileInputTests {
    static let wallTimeBound = 1.0
    static let peakRSSBoundMegabytes = 100.0

    @Test(arguments: HostileInput.all)
    func isRefusedWithOneDiagnosticAtTheRightPlace(_ input: HostileInput) throws {
        let directory = try TemporaryDirectory()
        let prepared = try input.prepare(directory)
        let run = try FlowrunBinary.run(["validate", prepared.path])
        HostileInputTests.printRow(input.name, run)

        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.diagnostics.count == 1, "expected exactly one diagnostic\n\(run)")
        let diagnostic = try #require(run.diagnostics.first, "\(run)")
        #expect(prepared.isAtExpectedPosition(diagnostic), "expected the diagnostic at \(prepared.position)\n\(run)")
        for fragment in prepared.messageFragments {
            #expect(diagnostic.contains(fragment), "the message should say '\(fragment)'\n\(run)")
        }
        #expect(run.wallSeconds < Self.wallTimeBound, "took \(run.wallMilliseconds) ms\n\(run)")
        #expect(run.peakRSSMegabytes < Self.peakRSSBoundMegabytes, "peak RSS \(run.peakRSSMegabytes) MB\n\(run)")
    }

    /// The classic attack is tiny: a file well under 1 KiB that would expand
    /// to a billion nodes if anything expanded it naively.
    @Test func theAliasBombIsUnderOneKilobyte() {
        let bomb = HostileInput.billionLaughs.text
        #expect(bomb.utf8.count < 1024)
        #expect(bomb.contains("*h,*h"))
    }

    /// Random text built from YAML's punctuation is valid UTF-8, so unlike
    /// random bytes it gets past the encoding check into libyaml and the
    /// validator. Whatever they say, they must say it as diagnostics inside
    /// the file, exit 2, and not crash or hang.
    @Test(arguments: 1...24)
    func randomYAMLPunctuationNeverCrashes(seed: UInt64) throws {
        let directory = try TemporaryDirectory()
        var random = SplitMix64(seed: seed)
        let alphabet = Array("[]{}:,-?&*!|>'\"%@`# \n\n\n  \ttasks run needs a b 1s ${{ }} <<".utf8)
        let bytes = (0..<2048).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
        let path = try directory.write(bytes, to: "punctuation.yaml")
        let run = try FlowrunBinary.run(["validate", path])

        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        #expect(!run.diagnostics.isEmpty, "\(run)")
        let lineCount = bytes.count { $0 == UInt8(ascii: "\n") } + 1
        for diagnostic in run.diagnostics {
            let position = diagnostic.dropFirst(path.count + 1).split(separator: ":", maxSplits: 2)
            let line = position.count > 1 ? Int(position[0]) : nil
            let column = position.count > 1 ? Int(position[1]) : nil
            #expect(diagnostic.hasPrefix(path + ":") && line.map { 1...lineCount ~= $0 } == true && (column ?? 0) >= 1,
                    "not a FILE:LINE:COLUMN diagnostic inside the file: \(diagnostic)")
        }
        #expect(run.wallSeconds < Self.wallTimeBound, "\(run)")
    }

    private static func printRow(_ name: String, _ run: FlowrunRun) {
        print(resultRow("hostile", name, run))
    }
}

/// One line of the numbers table: `KIND  NAME  exit N  WALL ms  RSS MB`
/// (`swift test … | grep -E '^(hostile|scale) '` collects the table).
func resultRow(_ kind: String, _ name: String, _ run: FlowrunRun) -> String {
    func padded(_ text: String, _ width: Int) -> String {
        text.count < width ? text + String(repeating: " ", count: width - text.count) : text
    }
    let exit = run.exitStatus.map { "exit \($0)" } ?? "signal \(run.signal ?? 0)"
    return padded(kind, 8) + padded(name, 46) + padded(exit, 10)
        + String(format: "%8.1f ms  ", run.wallMilliseconds)
        + (run.peakRSSIsExact ? String(format: "%6.1f MB", run.peakRSSMegabytes) : "     ? MB")
}

/// One hostile input: how to make it, and where and what flowrun must say.
struct HostileInput: Sendable, CustomTestStringConvertible {
    /// A file ready to validate and the one diagnostic it must produce.
    struct Prepared {
        var path: String
        var line: Int
        /// nil: any column of `line`.
        var column: Int?
        var messageFragments: [String]

        var position: String { "\(line):" + (column.map(String.init) ?? "*") }

        /// Whether `diagnostic` starts `FILE:LINE:COLUMN: error: ` at the expected place.
        func isAtExpectedPosition(_ diagnostic: String) -> Bool {
            if let column { return diagnostic.hasPrefix("\(path):\(line):\(column): error: ") }
            let prefix = "\(path):\(line):"
            guard diagnostic.hasPrefix(prefix) else { return false }
            let rest = diagnostic.dropFirst(prefix.count)
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            return !digits.isEmpty && rest.dropFirst(digits.count).hasPrefix(": error: ")
        }
    }

    var name: String
    var prepare: @Sendable (TemporaryDirectory) throws -> Prepared

    var testDescription: String { name }

    /// A case whose text marks the expected position with `‸`.
    init(_ name: String, _ marked: String, says fragments: [String]) {
        self.name = name
        prepare = { directory in
            let text = MarkedText(marked)
            let path = try directory.write(text.text, to: "hostile.yaml")
            return Prepared(path: path, line: text.line, column: text.column, messageFragments: fragments)
        }
    }

    /// A case whose bytes and position are computed.
    init(_ name: String, line: Int, column: Int, says fragments: [String], bytes: @escaping @Sendable () -> [UInt8]) {
        self.name = name
        prepare = { directory in
            Prepared(path: try directory.write(bytes(), to: "hostile.yaml"), line: line, column: column, messageFragments: fragments)
        }
    }

    init(_ name: String, prepare: @escaping @Sendable (TemporaryDirectory) throws -> Prepared) {
        self.name = name
        self.prepare = prepare
    }

    static let all: [HostileInput] = [
        billionLaughsCase,
        mergeKeyBomb,
        nested("[", depth: 30_000, name: "30,000-deep flow sequences [[[…"),
        nested("[", depth: 1_000_000, name: "1,000,000-deep flow sequences [[[…"),
        nested("{a: ", depth: 30_000, name: "30,000-deep flow mappings {a: {a: …"),
        nested("{a: ", depth: 1_000_000, name: "1,000,000-deep flow mappings {a: {a: …"),
        deepBlockMappings,
        twentyMegabytes,
        HostileInput("/dev/zero (endless input)") { _ in
            Prepared(path: "/dev/zero", line: 1, column: 1, messageFragments: ["larger than 16 MiB"])
        },
    ] + [64, 4096, 1 << 20].map(randomBinary) + [
        HostileInput("empty file", "‸", says: ["at least one task"]),
        HostileInput("only comments", "‸# nothing here\n# still nothing\n", says: ["at least one task"]),
        HostileInput("only ---", "‸---\n", says: ["at least one task"]),
        HostileInput("only --- without a newline", "‸---", says: ["at least one task"]),
        HostileInput("tabs for indentation", "tasks:\n‸\tbuild:\n\t\trun: make\n", says: ["tab"]),
        HostileInput("a tab after spaces", "tasks:\n  build:\n  ‸\trun: make\n", says: ["tab"]),
        HostileInput("duplicate task names", "tasks:\n  a: {run: x}\n  ‸a: {run: y}\n", says: ["duplicate key 'a'", "2:3"]),
        HostileInput(
            "duplicate keys in a task", "tasks:\n  a:\n    run: x\n    timeout: 1s\n    ‸timeout: 2s\n",
            says: ["duplicate key 'timeout'", "4:5"]),
        HostileInput(
            "a cycle of three tasks",
            "tasks:\n  ‸a: {run: x, needs: b}\n  b: {run: x, needs: c}\n  c: {run: x, needs: a}\n",
            says: ["dependency cycle: a -> b -> c -> a"]),
        HostileInput(
            "a typo'd key", "tasks:\n  build: { run: make, ‸tiemout: 5s }\n",
            says: ["unknown key 'tiemout' in task 'build' (did you mean 'timeout'?)"]),
        HostileInput("Latin-1 text", "name: caf‸\u{E9}\ntasks:\n  a: {run: x}\n", says: ["not UTF-8", "0xE9"])
            .encodedAsLatin1(),
        HostileInput("UTF-16 with a byte order mark", line: 1, column: 1, says: ["UTF-16"]) {
            [0xFF, 0xFE] + Array("tasks:\n  a: {run: x}\n".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        },
        HostileInput(
            "UTF-8 BOM, then a typo on line 1", line: 1, column: 2,
            says: ["unknown key 'tiemout'"]
        ) { [0xEF, 0xBB, 0xBF] + Array("{tiemout: 1, tasks: {a: {run: x}}}\n".utf8) },
        HostileInput("UTF-8 BOM, then Latin-1 on line 1", line: 1, column: 10, says: ["not UTF-8"]) {
            [0xEF, 0xBB, 0xBF] + Array("name: caf".utf8) + [0xE9, 0x0A]
        },
        HostileInput(
            "two YAML documents", "tasks:\n  a: {run: x}\n‸---\ntasks:\n  b: {run: y}\n",
            says: ["one YAML document", "second"]),
        HostileInput("an unknown alias", "tasks:\n  a: ‸*nope\n", says: ["unknown alias", "nope"]),
        HostileInput(
            "a NUL byte in a string", "tasks:\n  a: {run: \"x‸\u{0}y\"}\n",
            says: ["control characters", "U+0000"]),
        HostileInput(
            "CR LF line endings", "tasks:\r\n  a: {run: x}\r\n  b: {run: y, ‸tiemout: 5s}\r\n",
            says: ["did you mean 'timeout'?"]),
        HostileInput(
            "columns count characters, not bytes", "tasks:\n  a: {description: \"h\u{E9}llo \u{1F600}\", ‸tiemout: 5s, run: x}\n",
            says: ["did you mean 'timeout'?"]),
        HostileInput(
            "an unclosed flow sequence", "tasks:\n  a: {run: x, needs: [b\n‸",
            says: ["did not find expected ',' or ']'"]),
        hundredThousandItemList,
        fourMegabyteLine,
        HostileInput("a file that does not exist") { directory in
            Prepared(path: directory.path + "/missing.yaml", line: 1, column: 1, messageFragments: ["cannot open", "No such file"])
        },
        HostileInput("a directory") { directory in
            Prepared(path: directory.path, line: 1, column: 1, messageFragments: ["directory"])
        },
    ]

    /// Nine levels of ten aliases: 10^9 strings if expanded. The budget is
    /// 1,000,000 added nodes: through `e` aliases add 10·11 + 10·111 +
    /// 10·1111 + 10·11111 = 123,440; each `*e` adds 111,111, so the 8th `*e`
    /// (901,217 → 1,012,328) is the one that crosses it.
    static let billionLaughs: (text: String, line: Int, column: Int) = {
        var lines = ["lol: &a [" + Array(repeating: "lol", count: 10).joined(separator: ",") + "]"]
        for (previous, name) in zip("abcdefgh", "bcdefghi") {
            lines.append("\(name): &\(name) [" + Array(repeating: "*\(previous)", count: 10).joined(separator: ",") + "]")
        }
        let text = lines.joined(separator: "\n") + "\n"
        return (text, 6, "f: &f [".count + 7 * "*e,".count + 1)
    }()

    static let billionLaughsCase = HostileInput(
        "billion laughs (\(billionLaughs.text.utf8.count) bytes)", line: billionLaughs.line, column: billionLaughs.column,
        says: ["alias", "1000000 nodes"]
    ) { Array(billionLaughs.text.utf8) }

    /// The same bomb through merge keys (`<<`), which also expand aliases.
    static let mergeKeyBomb = HostileInput("merge-key bomb (<< of << of …)") { directory in
        var text = "x0: &x0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n"
        for level in 1...8 {
            text += "x\(level): &x\(level) {<<: [" + Array(repeating: "*x\(level - 1)", count: 10).joined(separator: ",") + "]}\n"
        }
        #expect(text.utf8.count < 1024)
        let path = try directory.write(text, to: "hostile.yaml")
        // Through x4 the aliases add about 230,000 nodes and each `*x4` about
        // 210,000, so one of x5's aliases crosses the budget; which one
        // depends on how a merged mapping is counted, so any column of line 6.
        return Prepared(path: path, line: 6, column: nil, messageFragments: ["alias", "1000000 nodes"])
    }

    /// Nesting past 100 levels is refused at the opening bracket of level 101.
    static func nested(_ opener: String, depth: Int, name: String) -> HostileInput {
        HostileInput(name, line: 1, column: 100 * opener.count + 1, says: ["nesting", "deeper than 100"]) {
            Array(String(repeating: opener, count: depth).utf8)
        }
    }

    /// 1,000 levels of block mappings, each one space deeper: level 101 starts at 101:101.
    static let deepBlockMappings = HostileInput("1,000-deep block mappings", line: 101, column: 101, says: ["nesting"]) {
        Array((0..<1000).map { String(repeating: " ", count: $0) + "a:\n" }.joined().utf8)
    }

    /// Refused by its size before any parsing, at 1:1.
    static let twentyMegabytes = HostileInput("20 MB file", line: 1, column: 1, says: ["larger than 16 MiB"]) {
        let line = Array("  task: {run: \"echo a generated line of a workflow gone big\"}\n".utf8)
        return Array("tasks:\n".utf8) + Array((0..<(20 * 1_048_576 / line.count + 1)).map { _ in line }.joined())
    }

    /// Seeded random bytes; refused as not UTF-8 at the first bad byte.
    static func randomBinary(size: Int) -> HostileInput {
        HostileInput("random binary, \(size) bytes") { directory in
            var random = SplitMix64(seed: UInt64(size))
            let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let path = try directory.write(bytes, to: "hostile.yaml")
            let expected = try #require(UTF8Reference.firstProblem(in: bytes), "the random bytes happen to be UTF-8")
            return Prepared(path: path, line: expected.line, column: expected.column, messageFragments: [expected.fragment])
        }
    }

    /// A 100,000-item list under a key, then a typo after it: the position
    /// must still be exact 100,000 lines down.
    static let hundredThousandItemList = HostileInput("100,000-item list, then a typo") { directory in
        var text = "groups:\n  g:\n    foreach:\n"
        for index in 0..<100_000 { text += "      - \(index)\n" }
        text += "    task: {run: echo, tiemout: 5s}\n"
        let path = try directory.write(text, to: "hostile.yaml")
        return Prepared(path: path, line: 100_004, column: 23, messageFragments: ["unknown key 'tiemout'", "did you mean 'timeout'?"])
    }

    /// One 4 MiB line (a pasted blob), then a typo.
    static let fourMegabyteLine = HostileInput("4 MiB single-line string, then a typo") { directory in
        let text = "name: \"" + String(repeating: "a", count: 4 * 1_048_576) + "\"\ntasks:\n  a: {run: x, tiemout: 5s}\n"
        let path = try directory.write(text, to: "hostile.yaml")
        return Prepared(path: path, line: 3, column: 15, messageFragments: ["unknown key 'tiemout'"])
    }

    /// The same case with its text written as Latin-1 instead of UTF-8.
    func encodedAsLatin1() -> HostileInput {
        let original = prepare
        return HostileInput(name) { directory in
            var prepared = try original(directory)
            let text = try String(contentsOfFile: prepared.path, encoding: .utf8)
            prepared.path = try directory.write(Array(text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }), to: "latin1.yaml")
            return prepared
        }
    }
}

/// An independent account of where a byte string stops being UTF-8.
enum UTF8Reference {
    static func firstProblem(in bytes: [UInt8]) -> (line: Int, column: Int, fragment: String)? {
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) { return (1, 1, "UTF-16") }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var line = 1
        var column = 1
        var previous: Unicode.Scalar?
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                let scalar = Unicode.UTF8.decode(encoded)
                switch scalar {
                case "\n" where previous == "\r": break
                case "\n", "\r", "\u{85}", "\u{2028}", "\u{2029}": (line, column) = (line + 1, 1)
                default: column += 1
                }
                previous = scalar
            case .error:
                return (line, column, "not UTF-8")
            case .emptyInput:
                return nil
            }
        }
    }
}

/// A small seeded generator, so random inputs are the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
