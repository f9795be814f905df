/// `sequential: true` groups (SPEC §10): members run one at a time in
/// written order, and a failure skips the rest.
extension RunEngine {
    /// `member` starts only once `previous` has settled (one more unsettled need).
    func waitInSequence(_ member: Int, after previous: Int) {
        nodes[member].runsAfter = previous
        guard !nodes[previous].status.isFinal else { return }
        nodes[previous].dependents.append(member)
        nodes[member].unsettledNeeds += 1
    }

    /// Whether the members after `index` are skipped: it failed or timed out
    /// (not allowed to), was cancelled, or was skipped for any reason but its
    /// own `if:` — so a skip caused by a failure passes down the line.
    func breaksSequence(_ index: Int) -> Bool {
        switch nodes[index].status {
        case .succeeded: return false
        case .skipped: return !nodes[index].skippedByOwnCondition
        default: return !nodes[index].isOK
        }
    }

    /// Why a step that runs after `previous` is skipped: the plan's reason
    /// (`targets run in the order given`, …), a sequential group's by default.
    func orderSkipReason(_ index: Int, after previous: Int) -> String {
        "\(nodes[previous].name) did not succeed (\(runsAfterReasons[index] ?? "sequential group"))"
    }
}
