/// A problem in the user's workflow, printed the way compilers print them:
/// `FILE:LINE:COLUMN: error: MESSAGE`.
public struct Diagnostic: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Severity: String, Hashable, Sendable {
        case error, warning
    }

    public var location: SourceLocation
    public var severity: Severity
    public var message: String

    public init(_ severity: Severity, _ message: String, at location: SourceLocation) {
        self.location = location
        self.severity = severity
        self.message = message
    }

    public static func error(_ message: String, at location: SourceLocation) -> Diagnostic {
        Diagnostic(.error, message, at: location)
    }

    public static func warning(_ message: String, at location: SourceLocation) -> Diagnostic {
        Diagnostic(.warning, message, at: location)
    }

    public var description: String { "\(location): \(severity.rawValue): \(message)" }
}

extension [Diagnostic] {
    /// Sorted by position, the way a compiler reports, without repeats.
    public func sortedByPosition() -> [Diagnostic] {
        var seen = Set<Diagnostic>()
        return filter { seen.insert($0).inserted }
            .enumerated()
            .sorted { ($0.element.location, $0.offset) < ($1.element.location, $1.offset) }
            .map(\.element)
    }

    public var hasErrors: Bool { contains { $0.severity == .error } }
}
