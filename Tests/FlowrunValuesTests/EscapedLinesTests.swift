import Testing
import FlowrunValues

/// `TerminalText.escapedLines`, what every stderr message goes through: its
/// own line breaks stay, every other control is escaped, and no line it
/// prints starts with `::` (a command to some CI runners, `::error::`).
@Suite struct EscapedLinesTests {
    @Test func noLineStartsWithTwoColons() {
        #expect(TerminalText.escapedLines("flowrun: no task 'x\n::error::pwn'") == "flowrun: no task 'x\n\\x3a:error::pwn'")
        #expect(TerminalText.escapedLines("::warning::w") == "\\x3a:warning::w")
        #expect(TerminalText.escapedLines("a\r\n::error::b") == "a\\r\n\\x3a:error::b")
    }

    @Test func plainTextAndItsOwnLineBreaksStay() {
        #expect(TerminalText.escapedLines("error: one\n  two: a::b\n") == "error: one\n  two: a::b\n")
        #expect(TerminalText.escapedLines("tab\there") == "tab\there")
    }
}
