#if canImport(Glibc)
import Glibc
#endif
import FlowrunLoading
import FlowrunPlanning
import FlowrunRecord
import FlowrunReporting

/// Shell completion of task, group and join names (`--only`, targets,
/// `logs TASK`): argument-parser's generated scripts call
/// `flowrun ---completion …` when the user presses TAB, which runs
/// `candidates` in flowrun itself with the words typed so far.
///
/// The workflow is the first word that is plainly a path (a `/`, or
/// `.yaml`/`.yml`), or a bare word naming a file as `RunArguments` takes it,
/// else the one `flowrun` would find by lookup if it trusts it
/// (`WorkflowTrust`: another user's file is never read). A file that
/// does not validate completes nothing; nothing is printed but the names.
enum TaskNameCompletion {
    /// The argument-parser closure: `.custom(TaskNameCompletion.candidates)`.
    @Sendable static func candidates(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        guard let file = workflowFile(in: words, completing: index) else { return [] }
        return names(in: file).filter { $0.hasPrefix(prefix) }
    }

    /// For `flowrun logs [RUN] TASK`: the tasks of a run as its record
    /// names them (fan-out members included): the run a word names (a run id
    /// or a unique prefix of one under `.flowrun/runs`), else the latest.
    /// `.flowrun/runs` is the current folder's, else the one beside the
    /// workflow lookup finds.
    @Sendable static func recordedCandidates(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        guard let history = try? RecordLocation.history(logDir: nil) else { return [] }
        let named = words.enumerated().dropFirst().first { position, word in
            position != index && !word.hasPrefix("-") && (try? history.resolve(word)) != nil
        }
        guard let id = try? history.resolve(named?.element),
              let run = try? RunTimeline(runFolder: history.folderPath(id)) else { return [] }
        var seen = Set<String>()
        let names = run.attempts.map(\.task) + run.instants.filter { $0.kind == .notRun }.map(\.name)
        return names.filter { $0.hasPrefix(prefix) && seen.insert($0).inserted }
    }

    /// Names a user can ask for: tasks, groups, joins and finally tasks
    /// (not a fan-out's template `G[*]`, which is no target).
    static func names(in file: String) -> [String] {
        let result = WorkflowValidator.validate(path: file, includes: WorkflowTrust.includeSettings)
        guard let workflow = result.workflow, !result.diagnostics.hasErrors,
              let plan = try? Planner.plan(workflow) else { return [] }
        return plan.listEntries.filter { $0.kind != "fan-out" }.map(\.name)
    }

    static func workflowFile(in words: [String], completing index: Int) -> String? {
        for (position, word) in words.enumerated().dropFirst() where position != index && !word.hasPrefix("-") {
            let path = unquoted(word)
            // A bare word is the file as `flowrun` would take it: with no workflow to look up, and trusted.
            if RunArguments.isPath(path) { return path }
            if isRegularFile(path), RunArguments.firstWord(path) == .bareFile,
               WorkflowTrust.fromEnvironment().refusal(forFileAt: path) == nil { return path }
        }
        return WorkflowFileLookup.trustedPath()
    }

    /// The shells pass words as typed: `'my flow.yaml'` or `my\ flow.yaml`.
    private static func unquoted(_ word: String) -> String {
        if word.count >= 2, let first = word.first, first == "'" || first == "\"", word.last == first {
            return String(word.dropFirst().dropLast())
        }
        var text = ""
        var escaped = false
        for character in word {
            if character == "\\", !escaped { escaped = true; continue }
            text.append(character)
            escaped = false
        }
        return text
    }

    private static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }
}
