import FlowrunPlanning
import FlowrunValues
#if canImport(Glibc)
import Glibc
#endif

/// The engine's side of the supervisor pair (see `Supervisor`).
extension RunEngine {
    /// At the run's start: hands the supervisor what it needs should the
    /// engine die (the run's cgroups, `events.jsonl`). The watch on the
    /// supervisor itself starts with the first attempt (`watchSupervisorLink`).
    func watchSupervisor() {
        // Before the events: the supervisor reads the cgroups' message first.
        runCgroups?.handToSupervisor()
        Supervisor.keepEvents(record.eventsForTheSupervisor(), startedAt: startSeconds, facts: factsForResume())
    }

    /// When the supervisor dies (`kill -9` of the pid the shell knows), no
    /// one is left to clean up after the engine: it kills every task at once,
    /// as a second Ctrl-C would, writes its record and exits. The record
    /// says the run was killed, with the exit the shell saw (128+N, 137 for
    /// SIGKILL), so that `resume` runs what did not succeed.
    ///
    /// Started before the run's first attempt, once: a run whose every task
    /// is up to date starts none, and spares the watching thread and the
    /// sentinel it forks (a copy of the engine's page tables) — a tenth of
    /// a no-op run's CPU. Nothing is lost: with no task there is nothing to
    /// kill, and a supervisor that died before the watch began is seen at
    /// once (its end of the link is closed, docs/BENCHMARKS.md).
    func watchSupervisorLink() {
        guard ownsProcess, Supervisor.startsWatching() else { return }
        // Unsupervised because the check before the split found every task
        // up to date: the engine's own check, on the same hashes and records, agrees.
        assert(!Supervisor.skippedAsNoOp, "a task starts in a run that skipped the supervisor as a no-op")
        let runID = record.runID
        Supervisor.whenGone { [weak self] signal in
            // Nothing new starts, and each attempt settles as killed…
            if let engine = self {
                engine.queue.async {
                    guard !engine.finished else { return }
                    if engine.killedBy == nil { engine.killedBy = signal }
                    if !engine.killingEverything { engine.killEverything() }
                }
            }
            // …while this thread kills every descendant now, in one sweep
            // rather than one tree at a time.
            ProcessTreeKiller.killAll(runID: runID, includingEveryDescendant: true)
        }
    }

    /// What `resume` needs of a run whose summary.json never came, as JSON
    /// members (`,"file":…`): the supervisor writes them into its
    /// `run_killed` line. Where the run ran and from which file, `--only`,
    /// and one hash of every task's identity.
    private func factsForResume() -> [UInt8] {
        var facts = JSONObjectWriter()
        facts.add("file", plan.workflow.file)
        facts.add("workflow_path", Self.absolutePath(plan.workflow.file))
        facts.add("cwd", Self.currentDirectory())
        if !plan.only.isEmpty { facts.add("only", plan.only) }
        facts.add("plan_identity", planIdentity)
        var members = shown(json: facts.finish())
        // `{"file":…}` → `,"file":…`
        guard members.count > 2 else { return [] }
        members.removeLast()
        members[0] = UInt8(ascii: ",")
        return members
    }
}
