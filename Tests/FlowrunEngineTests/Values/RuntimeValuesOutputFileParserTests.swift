@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import FlowrunTestSupport
import Testing

@Suite struct RuntimeValuesOutputFileParserTests {
    func parse(_ text: String, limit: Int = OutputFileParser.sizeLimit) -> OutputFile {
        OutputFileParser.parse(Array(text.utf8), limit: limit)
    }

    func pairs(_ file: OutputFile) -> [String] { file.pairs.map { "\($0.key)=\($0.value.debugDescription)" } }
    func problems(_ file: OutputFile) -> [String] { file.problems.map(\.description) }

    @Test func keyValueLines() {
        let file = parse("version=1.2.3\nurl=https://x/?a=b&c=d\nempty=\n_a-b9=ok\n")
        #expect(pairs(file) == [#"version="1.2.3""#, #"url="https://x/?a=b&c=d""#, #"empty="""#, #"_a-b9="ok""#])
        #expect(file.problems.isEmpty)
        #expect(file["version"] == "1.2.3")
        #expect(file["missing"] == nil)
    }

    @Test func laterWritesReplaceEarlierOnesInTheirFirstPlace() {
        let file = parse("a=1\nb=2\na=3\n")
        #expect(pairs(file) == [#"a="3""#, #"b="2""#])
    }

    @Test func crlfBlankLinesAndAMissingFinalNewline() {
        let file = parse("a=1\r\n\r\n\nb= 2 \r\nc=x\ry\nd=last")
        #expect(pairs(file) == [#"a="1""#, #"b=" 2 ""#, #"c="x\ry""#, #"d="last""#])
        #expect(file.problems.isEmpty)
    }

    @Test func heredocs() {
        let file = parse("""
            notes<<EOF
            - faster
            key=not a key

            EOF
            empty<<END
            END
            crlf<<X\r
            one\r
            two\r
            X\r
            after=1
            """)
        #expect(pairs(file) == [#"notes="- faster\nkey=not a key\n""#, #"empty="""#, #"crlf="one\ntwo""#, #"after="1""#])
        #expect(file.problems.isEmpty)
    }

    @Test func whicheverOfEqualsAndHeredocComesFirstDecides() {
        let file = parse("a=b<<c\nd<<E=F\nvalue\nE=F\n")
        #expect(pairs(file) == [#"a="b<<c""#, #"d="value""#])
    }

    @Test func onlyTheExactDelimiterLineClosesAHeredoc() {
        let file = parse("k<<EOF\n EOF\nEOF \nEOFX\nxEOF\neof\nEOF\n")
        #expect(pairs(file) == [#"k=" EOF\nEOF \nEOFX\nxEOF\neof""#])
    }

    @Test func anUnclosedHeredocSetsNothingAndCannotForgeTheKeysAfterIt() {
        let file = parse("before=1\nnotes<<EOF\nline\nstolen=yes\nEOF2\n")
        #expect(pairs(file) == [#"before="1""#])
        #expect(problems(file) == [
            "line 2: 'notes<<EOF' is never closed by a line 'EOF'; 'notes' is not set and the 3 lines after it were ignored"
        ])
    }

    @Test func unclosedHeredocMessagesCountTheIgnoredLines() {
        #expect(problems(parse("k<<EOF")) == ["line 1: 'k<<EOF' is never closed by a line 'EOF'; 'k' is not set"])
        #expect(problems(parse("k<<EOF\nx\n")) == [
            "line 1: 'k<<EOF' is never closed by a line 'EOF'; 'k' is not set and the line after it was ignored"
        ])
        #expect(problems(parse("a b<<EOF\nx\ny")) == [
            "line 1: 'a b' is not a valid key: use letters, digits, '_' and '-', not starting with a digit or '-'",
            "line 1: 'a b<<EOF' is never closed by a line 'EOF'; nothing was set and the 2 lines after it were ignored",
        ])
    }

    @Test func aLoneCarriageReturnDoesNotEndALine() {
        // Only \n ends a line: a value with a CR inside cannot set `y`.
        let file = parse("a=x\ry=2\n")
        #expect(pairs(file) == [#"a="x\ry=2""#])
    }

    @Test func aHeredocWithoutADelimiterStopsTheFile() {
        let file = parse("a=1\nb<<\nc=2\n")
        #expect(pairs(file) == [#"a="1""#])
        #expect(problems(file) == ["line 2: 'b<<' has no delimiter after '<<'; the rest of the file was ignored"])
    }

    @Test func badKeysAreProblemsAndSetNothing() {
        let file = parse("1a=x\n-a=x\nmy key=x\n=x\nk.e.y=x\nclé=x\nhello\nok=1\n")
        #expect(pairs(file) == [#"ok="1""#])
        let rule = "is not a valid key: use letters, digits, '_' and '-', not starting with a digit or '-'"
        #expect(problems(file) == [
            "line 1: '1a' \(rule)", "line 2: '-a' \(rule)", "line 3: 'my key' \(rule)", "line 4: a line starts with no key",
            "line 5: 'k.e.y' \(rule)", "line 6: 'clé' \(rule)", "line 7: expected KEY=VALUE or KEY<<DELIMITER, found 'hello'",
        ])
    }

    @Test func aHeredocWithABadKeyStillConsumesItsBody() {
        let file = parse("bad key<<EOF\nforged=1\nEOF\ngood=2\n")
        #expect(pairs(file) == [#"good="2""#])
        #expect(problems(file).count == 1)
    }

    @Test func messagesShowFileTextSafely() {
        let file = parse("\u{1B}[2J" + String(repeating: "k", count: 60) + "=x\n")
        #expect(problems(file) == ["line 1: '?[2J" + String(repeating: "k", count: 36) + "…' is not a valid key: use letters, digits, '_' and '-', not starting with a digit or '-'"])
    }

    @Test func invalidUTF8IsReplacedAndReported() {
        let file = OutputFileParser.parse(Array("a=x".utf8) + [0xFF, 0xC3] + Array("\nb<<E\n".utf8) + [0x80] + Array("\nE\n".utf8))
        #expect(file.pairs.map(\.value) == ["x\u{FFFD}\u{FFFD}", "\u{FFFD}"])
        #expect(problems(file) == [
            "line 1: the value of 'a' is not valid UTF-8; invalid bytes were replaced with U+FFFD",
            "line 2: the value of 'b' is not valid UTF-8; invalid bytes were replaced with U+FFFD",
        ])
    }

    @Test func onlyWholeLinesWithinTheSizeCapAreRead() {
        let file = parse("a=1\nb=22\nc=333\n", limit: 12)
        #expect(pairs(file) == [#"a="1""#, #"b="22""#])
        #expect(problems(file) == ["line 3: the file is larger than 12 bytes (15 bytes); this line and everything after it were ignored"])
    }

    @Test func aFileOverOneMebibyte() {
        let big = "big=" + String(repeating: "x", count: 1 << 20) + "\n"
        let file = OutputFileParser.parse(Array("small=1\n".utf8) + Array(big.utf8) + Array("late=1\n".utf8), fileSize: 3 << 20)
        #expect(pairs(file) == [#"small="1""#])
        #expect(problems(file) == ["line 2: the file is larger than 1 MiB (3145728 bytes); this line and everything after it were ignored"])
    }

    @Test func aHeredocCutByTheSizeCapIsUnclosed() {
        let file = parse("k<<E\n1\n2\nE\n", limit: 9)
        #expect(pairs(file).isEmpty)
        #expect(problems(file) == [
            "line 1: 'k<<E' is never closed by a line 'E'; 'k' is not set and the 2 lines after it were ignored",
            "line 4: the file is larger than 9 bytes (11 bytes); this line and everything after it were ignored",
        ])
    }

    @Test func problemsAreCapped() {
        let file = parse(String(repeating: "no key here\n", count: 150) + "ok=1\n")
        #expect(file.problems.count == OutputFileParser.problemLimit + 1)
        #expect(file.problems.last?.description == "… and 50 more problems")
        #expect(pairs(file) == [#"ok="1""#])
    }

    /// Values written the documented way — a line when it has no newline, else
    /// a heredoc with a delimiter not in the value — come back exactly, and no
    /// value sets a key it was not written under.
    @Test func randomValuesWrittenTheDocumentedWayComeBackExactly() {
        var generator = SeededGenerator(seed: 7)
        for round in 0..<300 {
            var text = ""
            var expected: [(String, String)] = []
            for index in 0..<Int.random(in: 1...8, using: &generator) {
                let key = "k\(index)_\(round)"
                var value = randomHostileString(using: &generator)
                if Bool.random(using: &generator) { value += "\n\(key)=forged\nEOF\nother=forged" }
                if value.utf8.contains(0x0A) || value.utf8.contains(0x0D) {
                    let delimiter = "ghadelimiter_\(generator.next())"
                    text += "\(key)<<\(delimiter)\n\(value)\n\(delimiter)\n"
                    // A CR that ends a line is read as part of a CRLF line ending.
                    let lines = value.utf8.split(separator: 0x0A, omittingEmptySubsequences: false)
                        .map { $0.last == 0x0D ? $0.dropLast() : $0[...] }
                    expected.append((key, String(decoding: Array(lines.joined(separator: [0x0A])), as: UTF8.self)))
                } else {
                    text += "\(key)=\(value)\n"
                    expected.append((key, value))
                }
            }
            let file = parse(text)
            #expect(file.pairs.map(\.key) == expected.map(\.0))
            #expect(file.pairs.map(\.value) == expected.map(\.1))
            #expect(file.problems.isEmpty)
        }
    }
}
