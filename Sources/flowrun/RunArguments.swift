import FlowrunModel
import FlowrunLoading
import FlowrunPlanning
import FlowrunValues
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `flowrun [FILE] [TARGET...]` (SPEC §10): the first argument is FILE when
/// it is plainly a path: it ends in `.yaml`/`.yml`, or it holds a `/` and
/// names a file (`./build`, `ci/flow`; a member `get x/y` stays a target). A bare word (`build`) is a target whenever the lookup
/// (`WorkflowFileLookup`) finds a workflow, even beside a file of that
/// name: someone else's `build` in a shared folder must not run as the
/// workflow. Only with no workflow to find is a bare word naming a file
/// (not a folder) FILE, and then only if `WorkflowTrust` trusts it as it
/// would a found one: it was not named as a path.
enum RunArguments {
    /// What the first argument is.
    enum FirstWord: Equatable {
        /// A path: FILE, trusted as named.
        case path
        /// A bare word naming a file, with no workflow to look up: FILE once trusted.
        case bareFile
        /// A target (FILE is looked up).
        case target
    }

    static func firstWord(_ word: String) -> FirstWord {
        if isPath(word) { return .path }
        if isFile(word), WorkflowFileLookup.find(from: WorkflowFileLookup.currentDirectory()) == nil { return .bareFile }
        return .target
    }

    /// FILE and the targets; a bare word's file that is not trusted is
    /// refused here (exit 2), saying how to run it anyway.
    static func split(_ arguments: [String]) throws -> (file: String?, targets: [String]) {
        guard let first = arguments.first else { return (nil, []) }
        switch firstWord(first) {
        case .target:
            return (nil, arguments)
        case .path:
            return (first, Array(arguments.dropFirst()))
        case .bareFile:
            if let refusal = WorkflowTrust.fromEnvironment().refusal(forFileAt: first) {
                Terminal.standardError.write(refusalMessage(first, refusal))
                throw ExitCode(2)
            }
            return (first, Array(arguments.dropFirst()))
        }
    }

    /// One line, as the lookup's refusal: the word, why, and the two ways to run it anyway.
    static func refusalMessage(_ word: String, _ refusal: WorkflowTrust.Refusal) -> String {
        let folder = WorkflowTrust.folderAndName(word).folder
        let shown = TerminalText.escaped(word)
        return "flowrun: refusing \(shown), taken as the workflow file (a word naming a file, with no flowrun.yaml to look up): \(refusal)"
            + "\(refusal.isUntrusted ? ", so another user could run commands as you" : ""); "
            + "to run it anyway, name it as a path (flowrun ./\(shown)) or trust its folder (\(WorkflowTrust.variable)=\(TerminalText.escaped(folder)))\n"
    }

    /// Plainly a path: it ends in `.yaml`/`.yml`, or holds a `/` and names a file.
    static func isPath(_ word: String) -> Bool {
        word.hasSuffix(".yaml") || word.hasSuffix(".yml") || (word.contains("/") && isFile(word))
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
        guard var workflow = WorkflowValidator.validate(path: found.path, includes: WorkflowTrust.includeSettings).workflow else { return false }
        // A member of a fan-out over `vars` is a target too, as the run will find it.
        Planner.sizeFanOutsKnownAtPlanning(&workflow)
        return TargetTable(workflow, graph: DependencyGraph(mainPhaseOf: workflow)).target(named: word) != nil
    }
}
