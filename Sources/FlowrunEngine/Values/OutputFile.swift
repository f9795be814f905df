/// The keys a task wrote to `$FLOWRUN_OUTPUT`, in first-written order, and the file's problems.
package struct OutputFile: Sendable, Equatable {
    /// Something wrong in the file, for the reporter to show next to the task.
    package struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// 1-based; nil for a remark about the whole file.
        package var line: Int?
        package var message: String

        package init(line: Int?, message: String) {
            self.line = line
            self.message = message
        }

        /// `line 3: 'my key' is not a valid key; …`
        package var description: String { line.map { "line \($0): \(message)" } ?? message }
    }

    /// Each key once, where it was first written.
    package private(set) var keys: [String] = []
    package private(set) var values: [String: String] = [:]
    package internal(set) var problems: [Problem] = []

    package init() {}

    package subscript(key: String) -> String? { values[key] }

    /// Keys and their last-written values, in first-written order.
    package var pairs: [(key: String, value: String)] { keys.map { ($0, values[$0] ?? "") } }

    /// A later write replaces the value but keeps the key's place.
    mutating func set(_ key: String, _ value: String) {
        if values.updateValue(value, forKey: key) == nil { keys.append(key) }
    }
}
