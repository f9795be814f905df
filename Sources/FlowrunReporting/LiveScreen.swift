/// Turns the live view's frames into the bytes of one `write()` each: the
/// lines that go above the live region (printed once, they scroll away like
/// any output), then the region itself, drawn over the previous one.
///
/// On a terminal each frame moves the cursor up to the region's first row,
/// rewrites every line, clears the rest of each line (`ESC[K`) and whatever
/// the previous frame had below (`ESC[J`), so a frame replaces the last one
/// without clearing the screen first: no flicker. The cursor is hidden
/// while the region is live and shown again by `close`. Every line is cut to
/// one column less than the width, so no line ever wraps (a line filling
/// the last column leaves some terminals in a pending-wrap state that makes
/// `ESC[K` eat the last character).
///
/// Not on a terminal, there is no region and no escape at all: only the
/// lines above, in full.
struct LiveScreen {
    let style: TerminalStyle
    let drawsRegion: Bool
    /// Columns each line of the region on screen takes, and the width it was drawn at.
    private(set) var regionWidths: [Int] = []
    private(set) var regionColumns = 0
    private(set) var cursorHidden = false

    static let hideCursor = "\u{1B}[?25l"
    static let showCursor = "\u{1B}[?25h"
    static let clearToEndOfLine = "\u{1B}[K"
    static let clearToEndOfScreen = "\u{1B}[J"

    init(style: TerminalStyle, drawsRegion: Bool) {
        self.style = style
        self.drawsRegion = drawsRegion
    }

    /// The bytes that print `above` and redraw the region as `region`.
    mutating func frame(above: [StyledLine], region: [StyledLine], columns: Int) -> String {
        guard drawsRegion else {
            return above.map { style.render($0, columns: nil) + "\n" }.joined()
        }
        let width = max(1, columns - 1)
        var bytes = ""
        if !cursorHidden && !region.isEmpty {
            bytes += Self.hideCursor
            cursorHidden = true
        }
        let up = rowsOnScreen(columns: columns)
        if up > 0 { bytes += "\u{1B}[\(up)A" }
        bytes += "\r"
        // After a resize, clear the old region whole before drawing: rows the
        // terminal re-wrapped keep a "continues on the next row" mark that
        // `ESC[K` leaves, and widening again would join them with the next.
        if regionColumns != 0 && columns != regionColumns { bytes += Self.clearToEndOfScreen }
        for line in above {
            bytes += style.render(line, columns: width) + Self.clearToEndOfLine + "\n"
        }
        regionWidths = []
        for line in region {
            let rendered = style.render(line, columns: width)
            bytes += rendered + Self.clearToEndOfLine + "\n"
            regionWidths.append(min(line.width, width))
        }
        regionColumns = columns
        bytes += Self.clearToEndOfScreen
        return bytes
    }

    /// The last frame: `above` (the summary) replaces the region, and the cursor comes back.
    mutating func close(above: [StyledLine], columns: Int) -> String {
        var bytes = frame(above: above, region: [], columns: columns)
        if cursorHidden {
            bytes += Self.showCursor
            cursorHidden = false
        }
        return bytes
    }

    /// Forgets the region on screen (after something else wrote to the
    /// terminal, e.g. while stopped by Ctrl-Z): the next frame starts below.
    mutating func forgetRegion() {
        regionWidths = []
    }

    /// Rows the region takes now. A terminal made narrower since it was
    /// drawn may have re-wrapped its lines (tmux, VTE, kitty and iTerm2 do),
    /// so a line `w` columns wide takes ⌈w / columns⌉ rows.
    func rowsOnScreen(columns: Int) -> Int {
        guard columns < regionColumns, columns > 0 else { return regionWidths.count }
        return regionWidths.reduce(0) { $0 + max(1, ($1 + columns - 1) / columns) }
    }
}
