/// The engine's side of the supervisor pair (see `Supervisor`).
extension RunEngine {
    /// When the supervisor dies (`kill -9` of the pid the shell knows), no
    /// one is left to clean up after the engine: it kills every task at once,
    /// as a second Ctrl-C would, writes its record and exits.
    func watchSupervisor() {
        let runID = record.runID
        Supervisor.whenGone { [weak self] in
            // Nothing new starts, and each attempt settles as killed…
            if let engine = self {
                engine.queue.async {
                    guard !engine.finished, !engine.killingEverything else { return }
                    engine.killEverything()
                }
            }
            // …while this thread kills every descendant now, in one sweep
            // rather than one tree at a time.
            ProcessTreeKiller.killAll(runID: runID, includingEveryDescendant: true)
        }
    }
}
