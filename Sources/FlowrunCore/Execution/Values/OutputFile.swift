/// The keys a task wrote to `$FLOWRUN_OUTPUT`, in first-written order, and the file's problems.
public struct OutputFile: Sendable, Equatable {
    /// Something wrong in the file, for the reporter to show next to the task.
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// 1-based; nil for a remark about the whole file.
        public var line: Int?
        public var message: String

        public init(line: Int?, message: String) {
            self.line = line
            self.message = message
        }

        /// `line 3: 'my key' is not a valid key; …`
        public var description: String { line.map { "line \($0): \(message)" } ?? message }
    }

    /// Each key once, where it was first written.
    public private(set) var keys: [String] = []
    public private(set) var values: [String: String] = [:]
    public internal(set) var problems: [Problem] = []

    public init() {}

    public subscript(key: String) -> String? { values[key] }

    /// Keys and their last-written values, in first-written order.
    public var pairs: [(key: String, value: String)] { keys.map { ($0, values[$0] ?? "") } }

    /// A later write replaces the value but keeps the key's place.
    mutating func set(_ key: String, _ value: String) {
        if values.updateValue(value, forKey: key) == nil { keys.append(key) }
    }
}
