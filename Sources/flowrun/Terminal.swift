#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import FlowrunModel
import FlowrunRecord
import FlowrunValues

/// Writing to stdout/stderr and knowing whether they are terminals.
enum Terminal {
    struct Stream {
        let descriptor: Int32
        /// stderr: flowrun's messages, which echo what the user typed
        /// (arguments, file names, names), with control characters escaped
        /// (`TerminalText.escapedLines`). stdout carries output as it is
        /// (a log into a pipe goes out byte for byte).
        var escapesControls = false

        var isTerminal: Bool { isatty(descriptor) == 1 }

        /// `--output auto` draws the live view: a terminal that can move its cursor.
        var showsLiveView: Bool {
            isTerminal && getenv("TERM").map { String(cString: $0) != "dumb" } ?? true
        }

        /// A failed write to stdout is noted (`exitIfOutputFailed`); one to
        /// stderr has nowhere left to be told.
        func write(_ text: String) {
            if !writeAll(descriptor, escapesControls ? TerminalText.escapedLines(text) : text), descriptor == STDOUT_FILENO {
                Terminal.noteOutputFailure(errno)
            }
        }

        /// Text flowrun made safe itself, with its own escape sequences (colours).
        func writeRendered(_ text: String) {
            if !writeAll(descriptor, text), descriptor == STDOUT_FILENO { Terminal.noteOutputFailure(errno) }
        }
    }

    /// The errno of the first write to stdout that failed. A Mutex: `logs -f`
    /// and the completion closures may write from other threads.
    private static let outputFailure = Mutex<Int32?>(nil)

    static func noteOutputFailure(_ code: Int32) {
        outputFailure.withLock { $0 = $0 ?? code }
    }

    /// What a command printed must have reached stdout (`flowrun list >
    /// /dev/full`): if a write failed, says so and exits 1. A reader that
    /// left (`flowrun list | head -1`, EPIPE) ends it quietly with 141, as
    /// SIGPIPE (ignored by flowrun) would have. A run does not come here:
    /// its console may go away without failing it (SPEC §7).
    static func exitIfOutputFailed() {
        guard let failure = outputFailure.withLock({ $0 }) else { return }
        if failure == EPIPE { exit(128 + SIGPIPE) }
        standardError.write("flowrun: cannot write standard output: \(String(cString: strerror(failure)))\n")
        exit(1)
    }

    static let standardOutput = Stream(descriptor: 1)
    static let standardError = Stream(descriptor: 2, escapesControls: true)

    /// Colour only on a terminal and never with `NO_COLOR` set (no-color.org).
    static var stderrUsesColor: Bool {
        standardError.isTerminal && getenv("NO_COLOR").map { String(cString: $0).isEmpty } ?? true
    }

    static func exit(_ code: Int32) -> Never {
        Glibc.exit(code)
    }

    /// Prints diagnostics to stderr the way compilers do; returns true when any is an error.
    @discardableResult
    static func report(_ diagnostics: [Diagnostic], source: SourceText) -> Bool {
        let renderer = DiagnosticRenderer(showsSourceLines: standardError.isTerminal, usesColor: stderrUsesColor)
        // The file's name and the message may echo what was typed, and a
        // source line anything the file holds: escaped before the colours go in.
        var lines = source.lines
        for var diagnostic in diagnostics {
            let index = diagnostic.location.line - 1
            if lines.indices.contains(index) { lines[index] = Substring(TerminalText.escaped(String(lines[index]))) }
            diagnostic.location.file = TerminalText.escaped(diagnostic.location.file)
            diagnostic.message = TerminalText.escapedLines(diagnostic.message)
            standardError.writeRendered(renderer.render(diagnostic, lines: lines) + "\n")
        }
        return diagnostics.hasErrors
    }
}
