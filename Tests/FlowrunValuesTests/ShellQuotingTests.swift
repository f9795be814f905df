import Foundation
import Testing
@testable import FlowrunModel
@testable import FlowrunValues

/// `ShellContextScanner` tells each `${{ }}`'s shell context, and
/// `ShellQuoting` writes a value for it; real shells read the result back.
@Suite struct ShellQuotingTests {
    static let here = SourceLocation(file: "w.yaml", line: 1, column: 1)

    /// `"echo ⟨⟩"`: each `⟨⟩` an expression.
    static func segments(_ script: String) -> [Template.Segment] {
        var segments: [Template.Segment] = []
        for (position, piece) in script.components(separatedBy: "⟨⟩").enumerated() {
            if position > 0 { segments.append(.expression(.operand(Operand(text: "item", path: .item, location: here)), here)) }
            if !piece.isEmpty { segments.append(.text(piece)) }
        }
        return segments
    }

    static func contexts(_ script: String) -> [ShellInsertion] {
        ShellContextScanner.insertionPoints(in: segments(script)).map(\.insertion)
    }

    @Test func eachPlaceHasItsContext() {
        #expect(Self.contexts("echo ⟨⟩ \"a ⟨⟩\" 'b ⟨⟩' $'c ⟨⟩'") == [.word, .doubleQuoted, .singleQuoted, .dollarSingleQuoted])
        #expect(Self.contexts("cat <<EOF\n⟨⟩\nEOF\necho ⟨⟩") == [.heredoc(delimiter: "EOF", quoted: false, stripsTabs: false), .word])
        #expect(Self.contexts("cat <<-'E F' <<X\n\t⟨⟩\n\tE F\n⟨⟩\nX\n⟨⟩") == [
            .heredoc(delimiter: "E F", quoted: true, stripsTabs: true), .heredoc(delimiter: "X", quoted: false, stripsTabs: false), .word,
        ])
        #expect(Self.contexts("cat <<< ⟨⟩; x=${y:-⟨⟩}; # ⟨⟩ \"\n⟨⟩") == [.word, .parameterWord, .comment, .word])
        #expect(Self.contexts("echo \"$(echo \"⟨⟩\" '⟨⟩')\" `echo ⟨⟩`") == [.doubleQuoted, .singleQuoted, .word])
        #expect(ShellContextScanner.insertionPoints(in: Self.segments("echo `echo \"⟨⟩\"`")) == [ShellInsertionPoint(.doubleQuoted, backticks: 1)])
        #expect(Self.contexts("case ⟨⟩ in ⟨⟩) echo ⟨⟩;; (b) x;; esac; [[ ⟨⟩ == ⟨⟩ ]]") == [.word, .word, .word, .word, .word])
    }

    @Test func bashArithmeticIsEvaluated() {
        let evaluated = [
            ("echo $((⟨⟩ + 1))", "$(( ))"), ("(( ⟨⟩ ))", "(( ))"), ("if (( ⟨⟩ )); then :; fi", "(( ))"), ("echo $[⟨⟩]", "$[ ]"),
            ("let x=⟨⟩", "let"), ("declare -i x=⟨⟩", "declare -i"), ("[[ 1 -lt ⟨⟩ ]]", "[[ -eq ]]"), ("[[ ⟨⟩ -ge 1 ]]", "[[ -eq ]]"),
            ("a[⟨⟩]=1", "an array subscript"), ("echo \"${a[⟨⟩]}\"", "an array subscript"), ("echo ${x:⟨⟩:2}", "${name:offset}"),
            ("cat <<EOF\n$((⟨⟩))\nEOF", "$(( ))"),
        ]
        for (script, construct) in evaluated {
            #expect(Self.contexts(script) == [.evaluated(construct: construct)], "\(script)")
        }
        // Not arithmetic: a subscript-looking argument, a comparison of text, a case in a subshell.
        #expect(Self.contexts("echo a[⟨⟩] && [[ ⟨⟩ == 1 ]] && (case x in y) echo ⟨⟩;; esac)") == [.word, .word, .word])
    }

    /// Every hostile value, in every context a shell reads back, prints its
    /// exact text through sh (dash) and bash and creates no file.
    @Test(arguments: ["/bin/sh", "/bin/bash"])
    func aShellReadsEachValueBackExactly(_ shell: String) throws {
        let values = ["x$(touch pwned)", "`touch pwned`", "it's \"q\" \\", "a\nb\n", "$HOME ${x} \\$ \\\\ \\`", "é ☃ \u{301}'", "", "EOF"]
        var scripts = [
            "printf '[%s]' ⟨⟩", "printf '[%s]' \"<⟨⟩>\"", "printf '[%s]' '<⟨⟩>'", "x=`printf '%s.' ⟨⟩`; printf '[%s]' \"${x%.}\"",
            "x=\"$(printf '%s.' \"⟨⟩\")\"; printf '[%s]' \"${x%.}\"", "x=${unset_x:-⟨⟩}; printf '[%s]' \"$x\"",
            "x=$(cat <<EOF\n<⟨⟩>\nEOF\n); printf '[%s]' \"$x\"", "x=$(cat <<'EOF'\n<⟨⟩>\nEOF\n); printf '[%s]' \"$x\"",
        ]
        if shell.hasSuffix("bash") { scripts.append("printf '[%s]' $'<⟨⟩>'") }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("flowrun-quoting-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for script in scripts {
            for value in values {
                let points = ShellContextScanner.insertionPoints(in: Self.segments(script))
                let pieces = script.components(separatedBy: "⟨⟩")
                var text = pieces[0]
                for (position, piece) in pieces.dropFirst().enumerated() { text += try ShellQuoting.text(value, at: points[position]) + piece }
                let printed = try Self.run(shell, text, in: folder)
                let expected = script.contains("<⟨⟩>") ? "<\(value)>" : value
                #expect(printed == "[\(expected)]", "\(shell): \(script.debugDescription) with \(value.debugDescription) → \(text.debugDescription)")
                #expect(!FileManager.default.fileExists(atPath: folder + "/pwned"), "\(text)")
            }
        }
    }

    @Test func whereNoQuotingHelpsTheValueIsRefused() {
        #expect(throws: ShellQuoting.Refusal.self) { try ShellQuoting.text("1", at: ShellInsertionPoint(.evaluated(construct: "$(( ))"))) }
        let heredoc = ShellInsertionPoint(.heredoc(delimiter: "EOF", quoted: false, stripsTabs: true))
        #expect(throws: ShellQuoting.Refusal.self) { try ShellQuoting.text("a\nEOF\ntouch pwned", at: heredoc) }
        #expect(throws: ShellQuoting.Refusal.self) { try ShellQuoting.text("a\n\tb", at: heredoc) }
        #expect((try? ShellQuoting.text("EOF and more", at: heredoc)) == "EOF and more")
        #expect((try? ShellQuoting.text("a\nb; $(x)", at: ShellInsertionPoint(.comment))) == "a b; $(x)")
    }

    static func run(_ shell: String, _ script: String, in folder: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = ["-c", script]
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
