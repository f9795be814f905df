/// flowrun's own environment as the C strings every task's shell receives,
/// built once per run: a spawn then copies 30-odd pointers instead of
/// measuring and copying 30-odd strings.
final class InheritedEnvironment: @unchecked Sendable {
    // @unchecked: immutable after init; nothing writes the buffer again.
    /// The variables' names, to tell whether a task's own entry replaces one.
    let names: Set<String>
    /// Whether any of them is flowrun's (`FLOWRUN_…`: flowrun runs inside a task).
    let hasFlowrunVariables: Bool
    private let strings: CStringArray
    var count: Int { strings.count }
    var pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> { strings.pointers }

    /// `variables`: name → value. An entry holding a NUL byte cannot be
    /// passed on and is left out.
    init(_ variables: [String: String]) {
        let entries = variables.map { "\($0.key)=\($0.value)" }.filter { !$0.utf8.contains(0) }
        names = Set(variables.keys)
        hasFlowrunVariables = names.contains { $0.hasPrefix("FLOWRUN_") }
        // Cannot throw: entries with a NUL byte were left out above.
        strings = try! CStringArray(entries, what: "environment entry")
    }
}
