import Glibc

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
    /// See `asShellPassesIt`; nil when that is this one.
    private let throughShell: InheritedEnvironment?
    var count: Int { strings.count }
    var pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> { strings.pointers }

    /// `variables`: name → value. An entry holding a NUL byte cannot be
    /// passed on and is left out.
    convenience init(_ variables: [String: String]) {
        let throughShell = Self.asShellPassesOn(variables)
        self.init(variables, throughShell: throughShell == variables ? nil : InheritedEnvironment(throughShell, throughShell: nil))
    }

    private init(_ variables: [String: String], throughShell: InheritedEnvironment?) {
        let entries = variables.map { "\($0.key)=\($0.value)" }.filter { !$0.utf8.contains(0) }
        names = Set(variables.keys)
        hasFlowrunVariables = names.contains { $0.hasPrefix("FLOWRUN_") }
        // Cannot throw: entries with a NUL byte were left out above.
        strings = try! CStringArray(entries, what: "environment entry")
        self.throughShell = throughShell
    }

    /// These variables as `/bin/sh` (dash) hands them on to a command it runs
    /// in flowrun's directory: without the names that are no shell names, and
    /// with PWD set to that directory unless it names it already. What a
    /// `DirectCommand` gets, so that it sees what it would under `sh -c`.
    var asShellPassesIt: InheritedEnvironment { throughShell ?? self }

    private static func asShellPassesOn(_ variables: [String: String]) -> [String: String] {
        var passed = variables.filter { isShellName($0.key) }
        if !namesCurrentDirectory(passed["PWD"]) {
            let directory = getcwd(nil, 0)
            defer { free(directory) }
            passed["PWD"] = directory.map { String(cString: $0) }
        }
        return passed
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`.
    private static func isShellName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            byte == UInt8(ascii: "_") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
    }

    /// Whether `path` is absolute and is the current directory (dash keeps such a PWD).
    private static func namesCurrentDirectory(_ path: String?) -> Bool {
        guard let path, path.hasPrefix("/") else { return false }
        var named = stat()
        var current = stat()
        guard stat(path, &named) == 0, stat(".", &current) == 0 else { return false }
        return named.st_dev == current.st_dev && named.st_ino == current.st_ino
    }
}
