/// Something wrong with a YAML text, at a position in it.
public struct YAMLProblem: Error, Hashable, Sendable, CustomStringConvertible {
    public var mark: Mark
    public var message: String

    public init(_ message: String, at mark: Mark) {
        self.mark = mark
        self.message = message
    }

    public var description: String { "\(mark): \(message)" }
}
