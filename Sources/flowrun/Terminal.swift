#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunRecord

/// Writing to stdout/stderr and knowing whether they are terminals.
enum Terminal {
    struct Stream {
        let descriptor: Int32

        var isTerminal: Bool { isatty(descriptor) == 1 }

        /// `--output auto` draws the live view: a terminal that can move its cursor.
        var showsLiveView: Bool {
            isTerminal && getenv("TERM").map { String(cString: $0) != "dumb" } ?? true
        }

        func write(_ text: String) {
            writeAll(descriptor, text)
        }
    }

    static let standardOutput = Stream(descriptor: 1)
    static let standardError = Stream(descriptor: 2)

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
        for diagnostic in diagnostics {
            standardError.write(renderer.render(diagnostic, lines: source.lines) + "\n")
        }
        return diagnostics.hasErrors
    }
}
