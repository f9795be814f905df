/// `sequential: true` groups (SPEC §10): members run one at a time in
/// written order, and a failure skips the rest.
extension RunEngine {
    /// `member` starts only once `previous` has settled (`Scheduler.waitInSequence`).
    func waitInSequence(_ member: Int, after previous: Int) {
        scheduler.waitInSequence(member, after: previous)
    }

    /// Why a step that runs after `previous` is skipped: the plan's reason
    /// (`targets run in the order given`, …), a sequential group's by default.
    func orderSkipReason(_ index: Int, after previous: Int) -> String {
        "\(nodes[previous].name) did not succeed (\(runsAfterReasons[index] ?? "sequential group"))"
    }
}
