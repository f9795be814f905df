import FlowrunModel
import FlowrunLoading
import FlowrunPlanning
#if canImport(Glibc)
import Glibc
#endif

/// `flowrun [FILE] [TARGET...]` (SPEC §10): the first argument is FILE when
/// it names an existing file (not a folder: `flowrun build` beside a
/// `build/` folder is a target) or ends in `.yaml`/`.yml`; otherwise FILE is
/// looked up (`WorkflowFileLookup`) and every argument is a target.
enum RunArguments {
    static func split(_ arguments: [String]) -> (file: String?, targets: [String]) {
        guard let first = arguments.first else { return (nil, []) }
        if first.hasSuffix(".yaml") || first.hasSuffix(".yml") || isFile(first) {
            return (first, Array(arguments.dropFirst()))
        }
        return (nil, arguments)
    }

    static func isFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT != S_IFDIR
    }

    /// Whether `word` runs something in the workflow lookup finds from here:
    /// then `flowrun lint` runs the target `lint`, not a misspelt `list`.
    /// A file the lookup does not trust is not read, and taken as holding
    /// the target: the refusal, not a "did you mean", is what the user needs.
    static func isTargetOfFoundWorkflow(_ word: String) -> Bool {
        guard let found = WorkflowFileLookup.lookUp() else { return false }
        guard found.isTrusted else { return true }
        guard var workflow = WorkflowValidator.validate(path: found.path).workflow else { return false }
        // A member of a fan-out over `vars` is a target too, as the run will find it.
        Planner.sizeFanOutsKnownAtPlanning(&workflow)
        return TargetTable(workflow, graph: DependencyGraph(mainPhaseOf: workflow)).target(named: word) != nil
    }
}
