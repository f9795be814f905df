/// A position in a YAML text: 1-based line and column (columns count characters).
public struct Mark: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var line: Int {
        get { Int(storedLine) }
        set { storedLine = UInt32(clamping: newValue) }
    }
    public var column: Int {
        get { Int(storedColumn) }
        set { storedColumn = UInt32(clamping: newValue) }
    }
    // 32 bits each (a file's size is limited far below 4 G): every node of a
    // document has a mark, and a 20,000-task file has 60,000 nodes.
    private var storedLine: UInt32
    private var storedColumn: UInt32

    public init(line: Int, column: Int) {
        storedLine = UInt32(clamping: line)
        storedColumn = UInt32(clamping: column)
    }

    /// The start of the text.
    public static let start = Mark(line: 1, column: 1)

    public static func < (a: Mark, b: Mark) -> Bool {
        (a.line, a.column) < (b.line, b.column)
    }

    public var description: String { "\(line):\(column)" }
}
