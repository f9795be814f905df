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
    public var source: String
    public var segments: [Segment]
    public var location: SourceLocation

    public init(source: String, segments: [Segment], location: SourceLocation) {
        self.source = source
        self.segments = segments
        self.location = location
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
