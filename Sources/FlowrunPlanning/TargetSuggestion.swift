import FlowrunModel

/// The did-you-mean of an unknown target: the nearest name by spelling,
/// else what go-task and just users type — `release:patch` (a namespace, or
/// a recipe's argument) for `release-patch` or `release`, and `release` for
/// a family `release-patch`, `release-minor`.
enum TargetSuggestion {
    static func hint(for name: String, in names: [String]) -> String {
        let nearest = Suggestion.hint(for: name, in: names)
        guard nearest.isEmpty else { return nearest }
        let known = Set(names)
        if name.contains(":") {
            for separator: Character in ["-", ".", "_"] {
                let respelled = String(name.map { $0 == ":" ? separator : $0 })
                if known.contains(respelled) { return " (did you mean '\(respelled)'?)" }
            }
            let head = String(name.prefix { $0 != ":" })
            if known.contains(head) {
                return " (did you mean '\(head)'? a target is a name alone: give it values with --var NAME=VALUE)"
            }
        }
        let family = names.filter { other in
            other.count > name.count && other.hasPrefix(name) && "-._:[".contains(other[other.index(other.startIndex, offsetBy: name.count)])
        }.sorted()
        guard !family.isEmpty else { return "" }
        let shown = family.prefix(5).map { "'\($0)'" }.joined(separator: ", ") + (family.count > 5 ? ", …" : "")
        return family.count == 1 ? " (did you mean \(shown)?)" : " (did you mean one of \(shown)?)"
    }
}
