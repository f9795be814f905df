/// Text with position markers taken out, and the 1-based line:column where
/// each stood, so tests name positions instead of counting columns.
///
/// `‸` marks the one position of a single-diagnostic case; `¹`…`⁹` mark
/// several. Columns count Unicode scalars and lines break at LF, CR LF and
/// CR, as libyaml counts them.
///
/// ```swift
/// let text = MarkedText("tasks:\n  build: { run: make, ‸tiemout: 5s }\n")
/// text.position  // "2:23"
/// ```
struct MarkedText {
    var text = ""
    /// Where `‸` stood (1:1 when there is none).
    var line = 1
    var column = 1
    /// Where `¹`…`⁹` stood, as `LINE:COLUMN`.
    var positions: [Int: String] = [:]

    var position: String { "\(line):\(column)" }

    init(_ marked: String) {
        let numbered: [Unicode.Scalar: Int] = ["¹": 1, "²": 2, "³": 3, "⁴": 4, "⁵": 5, "⁶": 6, "⁷": 7, "⁸": 8, "⁹": 9]
        var currentLine = 1
        var currentColumn = 1
        var previous: Unicode.Scalar?
        for scalar in marked.unicodeScalars {
            if scalar == "‸" {
                (line, column) = (currentLine, currentColumn)
                continue
            }
            if let number = numbered[scalar] {
                positions[number] = "\(currentLine):\(currentColumn)"
                continue
            }
            text.unicodeScalars.append(scalar)
            switch scalar {
            case "\n" where previous == "\r": break
            case "\n", "\r": (currentLine, currentColumn) = (currentLine + 1, 1)
            default: currentColumn += 1
            }
            previous = scalar
        }
    }

    /// The position of marker `number` (`¹` is 1).
    subscript(number: Int) -> String { positions[number] ?? "no marker \(number)" }
}
