#if canImport(Glibc)
import Glibc
#endif
import FlowrunYAML
import FlowrunModel

/// How `includes:` are loaded: the files on the way to this one (for
/// cycles), and the trust rule a file must pass to be read — the one the
/// workflow lookup applies (SPEC §11), given by the command line.
package struct IncludeSettings: Sendable {
    /// The including files, outermost first, as real paths.
    var chain: [String] = []
    /// Why `path` may not be read (another user's, in a folder others may write), or nil.
    package var refusal: (@Sendable (String) -> String?)?

    package init(refusal: (@Sendable (String) -> String?)? = nil) {
        self.refusal = refusal
    }
}

extension WorkflowValidator {
    /// Loads each included file (validated on its own: its problems are
    /// reported in it) and merges its tasks, groups, joins and vars into
    /// `workflow` under `NS:` (SPEC §15). A cycle, an untrusted file and a
    /// file that cannot be read are errors at the `includes:` entry.
    static func merge(
        _ entries: [IncludeEntry], into workflow: inout Workflow, names: inout NameTable, file: String, limits: YAMLLimits, settings: IncludeSettings
    ) -> [Diagnostic] {
        var diagnostics: [Diagnostic] = []
        let folder = file.contains("/") ? String(file[...file.lastIndex(of: "/")!]) : ""
        let me = realPath(file) ?? file
        for entry in entries {
            let path = entry.path.value.hasPrefix("/") ? entry.path.value : folder + entry.path.value
            let location = entry.path.location
            guard let real = realPath(path) else {
                diagnostics.append(.error("included file '\(entry.path.value)' cannot be read (\(String(cString: strerror(errno)))); the path is relative to the including file", at: location))
                continue
            }
            let chain = settings.chain + [me]
            if chain.contains(real) {
                diagnostics.append(.error("including '\(entry.path.value)' makes a cycle: it includes, directly or not, the file that includes it", at: location))
                continue
            }
            if let refusal = settings.refusal?(path) {
                diagnostics.append(.error("included file '\(entry.path.value)' is not trusted: \(refusal)", at: location))
                continue
            }
            var inner = settings
            inner.chain = chain
            let result = validate(path: path, limits: limits, includes: inner)
            diagnostics += result.diagnostics
            guard let included = result.workflow else {
                if !result.diagnostics.hasErrors { diagnostics.append(.error("included file '\(entry.path.value)' holds no workflow", at: location)) }
                continue
            }
            let prefix = entry.namespace.value + ":"
            let includedFolder = path.contains("/") ? String(path[...path.lastIndex(of: "/")!]) : ""
            // Its tasks' folder as this run sees it: relative to where flowrun runs, like the path.
            WorkflowNamespacing(prefix: prefix, folder: includedFolder == folder ? "" : includedFolder).merge(included, into: &workflow)
            names.add(included, prefix: prefix)
        }
        return diagnostics
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

extension NameTable {
    /// An included workflow's names, under `prefix`.
    mutating func add(_ included: Workflow, prefix: String) {
        for task in included.tasks { kinds[prefix + task.name] = .task }
        for task in included.finally {
            kinds[prefix + task.name] = .task
            finallyTasks.insert(prefix + task.name)
        }
        for join in included.joins { kinds[prefix + join.name] = .join }
        for group in included.groups {
            kinds[prefix + group.name] = .group
            for member in group.members {
                kinds[prefix + member.name] = .task
                groupOf[prefix + member.name] = prefix + group.name
            }
        }
    }
}
