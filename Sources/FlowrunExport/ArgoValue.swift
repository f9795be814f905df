/// Where a task, group or join lives in the manifest: the main DAG, the
/// nested DAG of a group, or the `onExit` DAG of `finally` tasks. A DAG only
/// sees its own tasks, so a value read across scopes is threaded through.
enum ArgoScope: Hashable {
    case main
    case group(String)
    case finally
}

/// An Argo variable such as `tasks.build.outputs.parameters.version`,
/// written as a `{{…}}` tag (arguments, env) or as an expression accessor
/// (`{{= … }}` in `when`).
struct ArgoPath: Hashable {
    var root: String
    var keys: [String]

    init(_ root: String, _ keys: String...) {
        self.root = root
        self.keys = keys
    }

    init(_ root: String, keys: [String]) {
        self.root = root
        self.keys = keys
    }

    var tag: String { "{{" + ([root] + keys).joined(separator: ".") + "}}" }

    var accessor: String { root + keys.map { "[" + ArgoExpression.quoted($0) + "]" }.joined() }
}

/// A value a task reads, as Argo can give it.
struct ArgoValue: Hashable {
    enum Kind: Hashable {
        /// Text, inserted as is.
        case text
        /// An Argo node phase (`Succeeded`, `Omitted`, …), mapped to flowrun's
        /// status words (`succeeded`, `skipped`, …) where it is used.
        case phase
    }

    var path: ArgoPath
    var kind: Kind = .text
}
