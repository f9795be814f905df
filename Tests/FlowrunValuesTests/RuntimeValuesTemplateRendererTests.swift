@testable import FlowrunModel
@testable import FlowrunValues
import FlowrunTestSupport
import Foundation
import Testing

@Suite struct RuntimeValuesTemplateRendererTests {
    static let hostileValues: [String] = [
        "'; touch pwned #", "$(touch pwned)", "`touch pwned`", "\"; touch pwned; \"", "'", "''", "\"", "\\", "\\'",
        "a\nb", "\n", "line\n; touch pwned", "*", "~", "~root", "-n", "--help", "-", "$HOME", "${HOME}", "$((1+1))",
        "!!", "a b  c", "\t", "\r\n", "é 中文 😀 👩‍👩‍👧", "'\u{301}; touch pwned #", "\u{1B}[31mred", "%s%d%%", "&& touch pwned",
        "| touch pwned", "> pwned", "< /etc/passwd", "{a,b}", "[a-z]*", "#comment", "x=1 touch pwned", "", " ", "'\"'\"'",
    ]

    // MARK: Quoting

    @Test(arguments: [
        ("", "''"), ("abc", "'abc'"), ("it's", #"'it'\''s'"#), ("'", #"''\'''"#), ("a b", "'a b'"), ("$x", "'$x'"),
        ("'\u{301}", "''\\''\u{301}'"),
    ])
    func eachValueBecomesOneSingleQuotedWord(value: String, word: String) {
        #expect(TemplateRenderer.shellWord(value) == word)
    }

    @Test func shellModeQuotesEveryValueAndTextModeInsertsItAsIs() throws {
        let context = ExpressionValues([.task("a", .stdout): .string("it's here"), .index: .number(2)])
        let template = try runtimeTemplate("echo ${{ tasks.a.stdout }} --n=${{ index }} ${{ tasks.a.outputs.none }}")
        #expect(try TemplateRenderer.render(template, mode: .shell, in: context) == #"echo 'it'\''s here' --n='2' ''"#)
        #expect(try TemplateRenderer.render(template, mode: .text, in: context) == "echo it's here --n=2 ")
    }

    @Test func comparisonsRenderAsTrueOrFalse() throws {
        let template = try runtimeTemplate("${{ tasks.a.exit_code == 0 }}/${{ 1.50 }}/${{ 'x' }}")
        let context = ExpressionValues([.task("a", .exitCode): .number(0)])
        #expect(try TemplateRenderer.render(template, mode: .text, in: context) == "true/1.5/x")
    }

    @Test func aNulByteInAValueFailsTheRenderInBothModes() throws {
        let template = try runtimeTemplate("printf %s ${{ tasks.a.stdout }}")
        let context = ExpressionValues([.task("a", .stdout): .string("bin\u{0}ary")])
        for mode in [TemplateRenderer.Mode.shell, .text] {
            #expect {
                try TemplateRenderer.render(template, mode: mode, in: context)
            } throws: { error in
                (error as? TemplateRenderError)?.description
                    == "test.yaml:1:11: the value of ${{ tasks.a.stdout }} contains a NUL byte, which cannot be passed to a process"
            }
        }
    }

    @Test func aNulByteInTheTemplateTextFailsTheRender() {
        let template = Template(source: "a\u{0}b", segments: [.text("a\u{0}b")], location: .init(file: "w.yaml", line: 3, column: 8))
        #expect {
            try TemplateRenderer.render(template, mode: .shell, in: ExpressionValues())
        } throws: { error in
            (error as? TemplateRenderError)?.description == "w.yaml:3:8: the text contains a NUL byte, which cannot be passed to a process"
        }
    }

    // MARK: Through a real shell

    @Test(arguments: ["/bin/sh", "/bin/bash"])
    func hostileValuesArriveByteExactAndRunNothing(shell: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: shell), "\(shell) is missing: install \((shell as NSString).lastPathComponent) to run this test")
        let directory = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let template = try runtimeTemplate("printf '%s' ${{ item }}")
        for value in Self.hostileValues {
            let script = try TemplateRenderer.render(template, mode: .shell, in: ExpressionValues([.item: .string(value)]))
            let result = try runShell(shell, script, in: directory)
            #expect(result.status == 0, "\(value.debugDescription): \(result.stderr)")
            #expect(result.stdout == Array(value.utf8), "\(value.debugDescription) arrived as \(String(decoding: result.stdout, as: UTF8.self).debugDescription)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "\(value.debugDescription) created a file")
        }
    }

    @Test func valuesNextToTextJoinTheSameWord() throws {
        let directory = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let template = try runtimeTemplate("set -- --tag=${{ item }}x${{ index }}; printf '%s|' \"$#\" \"$@\"")
        let script = try TemplateRenderer.render(template, mode: .shell, in: ExpressionValues([.item: .string("a b'c"), .index: .number(7)]))
        let result = try runShell("/bin/sh", script, in: directory)
        #expect(String(decoding: result.stdout, as: UTF8.self) == "1|--tag=a b'cx7|")
    }

    @Test(arguments: ["/bin/sh", "/bin/bash"])
    func randomValuesArriveByteExactAndRunNothing(shell: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: shell), "\(shell) is missing: install \((shell as NSString).lastPathComponent) to run this test")
        let directory = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var generator = SeededGenerator(seed: 0xF10A)
        let template = try runtimeTemplate("printf '%s\\000' ${{ item }}\n")
        // 1,200 values in batches, one shell each; a script stays well under
        // Linux's 128 KiB limit for one argument.
        for _ in 0..<12 {
            let values = (0..<100).map { _ in randomHostileString(using: &generator) }
            var script = ""
            for value in values {
                script += try TemplateRenderer.render(template, mode: .shell, in: ExpressionValues([.item: .string(value)]))
            }
            let result = try runShell(shell, script, in: directory)
            #expect(result.status == 0, "\(result.stderr)")
            let received = result.stdout.split(separator: 0, omittingEmptySubsequences: false).dropLast().map { Array($0) }
            #expect(received.count == values.count)
            for (value, bytes) in zip(values, received) where bytes != Array(value.utf8) {
                Issue.record("\(value.debugDescription) arrived as \(String(decoding: bytes, as: UTF8.self).debugDescription)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }
}
