/// A string that may hold `${{ expr }}` parts, filled in at run time.
///
/// In `run:` each filled-in value becomes one shell-quoted word; elsewhere it
/// is inserted as text.
public struct Template: Sendable {
    public enum Segment: Sendable {
        case text(String)
        case expression(Expression, SourceLocation)
    }

    /// As written in the file.
    public var source: String {
        didSet { if segmentsAreSource && source != oldValue { (storedSegments, segmentsAreSource) = ([.text(oldValue)], false) } }
    }
    public var segments: [Segment] {
        get { segmentsAreSource ? [.text(source)] : storedSegments }
        set { (storedSegments, segmentsAreSource) = Self.stored(newValue, source: source) }
    }
    public var location: SourceLocation
    /// Empty when `segmentsAreSource`: a template without `${{ }}` (nearly
    /// every `run:`) is its one text segment, the source itself; an array
    /// for it cost 80 bytes a task and could hold a second copy of the script.
    private var storedSegments: [Segment]
    private var segmentsAreSource: Bool

    public init(source: String, segments: [Segment], location: SourceLocation) {
        self.source = source
        self.location = location
        (storedSegments, segmentsAreSource) = Self.stored(segments, source: source)
    }

    private static func stored(_ segments: [Segment], source: String) -> ([Segment], Bool) {
        if segments.count == 1, case .text(let text) = segments[0], text == source { return ([], true) }
        return (segments, false)
    }

    /// Every operand of every expression in the template.
    public var operands: [Operand] {
        segments.flatMap { segment -> [Operand] in
            if case .expression(let expression, _) = segment { return expression.operands }
            return []
        }
    }

    /// True when the template holds no expression.
    public var isLiteral: Bool { operands.isEmpty && !segments.contains { if case .expression = $0 { true } else { false } } }
}

extension Template {
    /// Whether a segment is `${{ args }}` alone, the one way a `run:` reads the words after `--`.
    package static func isWholeArguments(_ segment: Segment) -> Bool {
        if case .expression(.operand(let operand), _) = segment, operand.path == .arguments { return true }
        return false
    }

    /// `operands`, leaving out each `${{ args }}` that is a whole expression.
    package var operandsBesideWholeArguments: [Operand] {
        segments.flatMap { segment -> [Operand] in
            guard case .expression(let expression, _) = segment, !Self.isWholeArguments(segment) else { return [] }
            return expression.operands
        }
    }
}
