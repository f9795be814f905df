import FlowrunModel

/// `needs` + `when` as an Argo `depends` expression. Argo would treat a bare
/// `A` as "A succeeded or was skipped", so every term names its results.
enum ArgoDepends {
    struct Need {
        var name: String
        /// A `continue_on_error` task counts as succeeded when it fails.
        var continueOnError: Bool
    }

    /// The `depends` text, and whether the condition can never hold (every
    /// need of a `when: failure` task is allowed to fail).
    static func expression(_ needs: [Need], when: RunCondition) -> (depends: String?, never: Bool) {
        guard !needs.isEmpty else { return (nil, false) }
        switch when {
        case .success:
            return (needs.map(succeeded).joined(separator: " && "), false)
        case .failure:
            let watched = needs.filter { !$0.continueOnError }
            let waited = needs.filter(\.continueOnError).map { settled($0.name) }
            guard !watched.isEmpty else { return (waited.joined(separator: " && "), true) }
            let failed = "(" + watched.map { "\($0.name).Failed || \($0.name).Errored" }.joined(separator: " || ") + ")"
            return (([failed] + waited).joined(separator: " && "), false)
        case .always:
            return (needs.map { settled($0.name) }.joined(separator: " && "), false)
        }
    }

    static func succeeded(_ need: Need) -> String {
        need.continueOnError ? "(\(need.name).Succeeded || \(need.name).Failed || \(need.name).Errored)" : "\(need.name).Succeeded"
    }

    /// True once the task ended, whatever happened (Argo evaluates `depends`
    /// only when every task it names has ended).
    static func settled(_ name: String) -> String {
        "(\(name).Succeeded || \(name).Failed || \(name).Errored || \(name).Skipped || \(name).Omitted)"
    }
}
