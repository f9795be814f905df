import FlowrunModel
import FlowrunEvents

/// A node whose needs have settled: does it run, wait, skip or cancel
/// (SPEC §3 `when:`, §10 sequences, §7 stopping)? The `if:` expression
/// is the engine's to evaluate (it needs the stashes): `.run` means "if
/// its `if:` holds".
extension Scheduler {
    enum Readiness: Equatable {
        /// Not pending any more (settled or started meanwhile): nothing to do.
        case settled
        /// The run is stopping, or the node's group timed out.
        case cancel(CancelReason)
        /// A join: its members settle it, not its needs.
        case waitsForMembers
        /// The step it runs after did not succeed (`sequential:`, targets' order).
        case outOfOrder(after: Int)
        /// Its `when:` does not hold over its needs.
        case skip(why: String)
        /// It runs (a task once its `if:` holds and it is admitted; a group starts).
        case run
    }

    /// The decision for `index`, whose needs have all settled; `when` is its
    /// own (a task's, or a group's, `.success` if it has none). A skip by
    /// its own `when: failure` is marked, so a sequence goes on past it.
    mutating func readiness(of index: Int, when: RunCondition) -> Readiness {
        guard nodes[index].status == .pending else { return .settled }
        if let reason = stopReason(for: index) { return .cancel(reason) }
        if nodes[index].kind == .join { return .waitsForMembers }
        if let previous = nodes[index].runsAfter, breaksSequence(previous) { return .outOfOrder(after: previous) }
        guard whenHolds(when, over: nodes[index].needs) else {
            nodes[index].skippedByOwnCondition = when == .failure
            return .skip(why: when == .failure ? "no need failed" : "a need did not succeed")
        }
        return .run
    }

    /// `when: success` runs when every need is OK (succeeded, or failed
    /// and allowed to); `failure` when one failed and was not allowed to;
    /// `always` whatever they did.
    func whenHolds(_ when: RunCondition, over needs: [Int]) -> Bool {
        switch when {
        case .success: return needs.allSatisfy { nodes[$0].isOK }
        case .failure: return needs.contains { nodes[$0].isFailure && !nodes[$0].isOK }
        case .always: return true
        }
    }

    /// Whether a node that became ready must be cancelled instead: the run is
    /// stopping, or its group has timed out.
    func stopReason(for index: Int) -> CancelReason? {
        if nodes[index].isFinally { return killingEverything ? .signal : nil }
        if let stopping { return stopping }
        if let group = nodes[index].group, nodes[group].groupTimedOut { return .groupTimeout }
        return nil
    }

    /// One more of `dependent`'s needs (or its group's start) has settled;
    /// true when that was the last, and it is ready for `readiness(of:when:)`.
    mutating func needSettled(_ dependent: Int) -> Bool {
        guard nodes.contains(dependent) else { return false }
        nodes[dependent].unsettledNeeds -= 1
        return nodes[dependent].unsettledNeeds == 0
    }

    // MARK: - Sequences

    /// `member` starts only once `previous` has settled (one more unsettled need).
    mutating func waitInSequence(_ member: Int, after previous: Int) {
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
}
