/// Makes fan-out member names unique (docs/FORMAT.md "Member names").
///
/// A rendered `name:` (or `GROUP[INDEX]`) that is already taken — by an
/// earlier member, or by any task, group or join — gets the first free
/// suffix `~2`, `~3`, …: items `a`, `a`, `a` give `a`, `a~2`, `a~3`. Static
/// names cannot hold `~` (validation allows letters, digits, `_`, `.`, `-`),
/// so a suffixed name never shadows a declared one, and a name that was
/// itself suffixed is checked like any other.
struct MemberNames {
    /// The next suffix to try per base name: 150,000 equal items cost one
    /// look-up each, not a scan over the suffixes already given.
    private var nextSuffix: [String: Int] = [:]

    mutating func unique(_ name: String, isTaken: (String) -> Bool) -> String {
        guard isTaken(name) else { return name }
        var suffix = nextSuffix[name] ?? 2
        while isTaken("\(name)~\(suffix)") { suffix += 1 }
        nextSuffix[name] = suffix + 1
        return "\(name)~\(suffix)"
    }
}
