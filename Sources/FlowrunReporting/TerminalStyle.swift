#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues

/// What a piece of live-view text means; `TerminalStyle` decides how that looks.
enum TextRole: Sendable, Equatable {
    case plain, bold, dim, success, failure, warning, accent
}

/// One line of the live view as spans of text with a role each: the frame
/// code builds these without knowing about escape codes, and `render` cuts
/// them to the terminal's width (counting columns, not bytes) before any
/// colour is added, so a colour code can never be cut in half or counted.
struct StyledLine: Sendable, Equatable, CustomStringConvertible {
    var spans: [(text: String, role: TextRole)]

    init(_ spans: [(text: String, role: TextRole)] = []) {
        self.spans = spans
    }

    init(_ text: String, _ role: TextRole = .plain) {
        spans = [(text, role)]
    }

    static func == (left: StyledLine, right: StyledLine) -> Bool {
        left.spans.count == right.spans.count && zip(left.spans, right.spans).allSatisfy { $0.text == $1.text && $0.role == $1.role }
    }

    mutating func append(_ text: String, _ role: TextRole = .plain) {
        guard !text.isEmpty else { return }
        spans.append((text, role))
    }

    /// The text without styling.
    var description: String { spans.map(\.text).joined() }

    var width: Int { spans.reduce(0) { $0 + TerminalText.width($1.text) } }
}

/// How the live view paints: ANSI SGR colours, or nothing at all. The only
/// place (with `LiveScreen`'s cursor moves) that knows escape codes.
struct TerminalStyle: Sendable {
    var usesColor: Bool

    /// Colour only on a terminal and never with `NO_COLOR` set to anything
    /// non-empty (no-color.org); `TERM=dumb` gets none either.
    static func colorAllowed(descriptor: Int32, environment: (String) -> String? = { getenv($0).map { String(cString: $0) } }) -> Bool {
        guard isatty(descriptor) == 1 else { return false }
        if let noColor = environment("NO_COLOR"), !noColor.isEmpty { return false }
        return environment("TERM") != "dumb"
    }

    private func code(for role: TextRole) -> String? {
        switch role {
        case .plain: return nil
        case .bold: return "1"
        case .dim: return "2"
        case .success: return "32"
        case .failure: return "31"
        case .warning: return "33"
        case .accent: return "36"
        }
    }

    /// The line as text for the terminal, at most `columns` columns wide
    /// (nil: as long as it is).
    func render(_ line: StyledLine, columns: Int?) -> String {
        var remaining = columns ?? Int.max
        let cut = columns.map { line.width > $0 } ?? false
        if cut { remaining -= 1 }  // room for the "…"
        var result = ""
        for span in line.spans where remaining > 0 {
            var text = span.text
            let width = TerminalText.width(text)
            if width > remaining {
                text = String(TerminalText.truncated(text, to: remaining + 1).dropLast())
            }
            remaining -= min(width, remaining)
            if usesColor, let code = code(for: span.role) {
                result += "\u{1B}[\(code)m" + text + "\u{1B}[0m"
            } else {
                result += text
            }
        }
        if cut { result += "…" }
        return result
    }
}
