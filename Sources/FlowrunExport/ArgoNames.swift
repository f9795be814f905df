/// Argo names for flowrun names. DAG task and template names must match
/// `[a-zA-Z0-9][-a-zA-Z0-9]*` (a `.` would split `A.Succeeded` in `depends`),
/// so `_` and `.` become `-`, and a clash gets `-2`, `-3`, … in first-come order.
struct ArgoNames {
    private var byOriginal: [String: String] = [:]
    private var taken: Set<String> = []

    /// Reserves names that flowrun names must not take (e.g. the entrypoint).
    init(reserving reserved: [String] = []) {
        taken = Set(reserved)
    }

    /// The Argo name for `original`, allocated on first use.
    mutating func name(for original: String, base wanted: String? = nil) -> String {
        if let known = byOriginal[original] { return known }
        let base = Self.sanitized(wanted ?? original)
        var candidate = base
        var counter = 2
        while taken.contains(candidate) {
            candidate = "\(base.prefix(Self.maxLength - 4))-\(counter)"
            counter += 1
        }
        taken.insert(candidate)
        byOriginal[original] = candidate
        return candidate
    }

    /// A fresh name that no flowrun name maps to.
    mutating func fresh(_ base: String) -> String {
        name(for: "\u{0}" + base, base: base)
    }

    /// Kubernetes labels and Argo node names stay short; 63 is the label limit.
    static let maxLength = 63

    static func sanitized(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars where scalar != "\u{0}" {
            let isAlphanumeric = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            result.unicodeScalars.append(isAlphanumeric ? scalar : "-")
        }
        while result.hasPrefix("-") { result.removeFirst() }
        while result.hasSuffix("-") { result.removeLast() }
        if result.isEmpty { result = "x" }
        return String(result.prefix(maxLength))
    }

    /// A DNS-1123 name for Kubernetes objects (`metadata.name`): lowercase.
    static func objectName(_ text: String) -> String {
        let lowered = sanitized(text.lowercased())
        return String(lowered.prefix(maxLength - 10))
    }
}
