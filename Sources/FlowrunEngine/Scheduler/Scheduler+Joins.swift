import FlowrunModel
import FlowrunEvents

/// Joins' quorum arithmetic (SPEC §5): complete at `need` members that
/// count, fail once `need` is out of reach, or stop waiting at the deadline.
extension Scheduler {
    /// How a join completes, and why.
    struct JoinVerdict: Equatable {
        var status: TaskStatus
        var why: String
    }

    /// One more member of `join` settled: the verdict if that completes it.
    mutating func joinMemberSettled(_ join: Int) -> JoinVerdict? {
        guard !nodes[join].status.isFinal else { return nil }
        nodes[join].settledMembers += 1
        let succeeded = nodes[join].members.filter(countsAsSucceeded).count
        nodes[join].succeededMembers = succeeded
        let total = nodes[join].members.count
        let required = nodes[join].required
        if succeeded >= required {
            return JoinVerdict(status: .succeeded, why: "\(succeeded)/\(total) succeeded")
        }
        if total - nodes[join].settledMembers + succeeded < required {
            return JoinVerdict(status: .failed, why: "only \(succeeded) of \(total) can succeed, \(required) needed")
        }
        return nil
    }

    /// Whether a member counts toward `need` (SPEC §5): it succeeded, or it
    /// failed with `continue_on_error: true` — allowed to fail, as for its
    /// dependents; the join block still shows it failed.
    func countsAsSucceeded(_ member: Int) -> Bool {
        nodes[member].isOK
    }

    /// The join's deadline passed: it stopped waiting, with the verdict its `on_timeout:` gives.
    mutating func joinDeadlinePassed(_ join: Int) -> JoinVerdict? {
        guard !nodes[join].status.isFinal, let definition = nodes[join].joinDefinition else { return nil }
        nodes[join].joinTimedOut = true
        return JoinVerdict(status: definition.onTimeout == .continue ? .succeeded : .timedOut, why: "deadline passed")
    }

    /// Joins with nothing to wait for: they complete at once.
    func emptyJoins() -> [Int] {
        nodes.indices.filter { nodes[$0].kind == .join && nodes[$0].status == .pending && nodes[$0].required == 0 }
    }

    /// The members a completing join leaves behind, to be cancelled
    /// (`losers`): at quorum or the deadline they are no longer wanted. A
    /// join that can no longer succeed lets them finish (as make -k and
    /// go-task do: their work and logs may be what the user needs next),
    /// unless `fail_fast` stops the run anyway.
    func losers(of join: Int, completingAs status: TaskStatus, failFast: Bool) -> [Int] {
        guard status != .failed || failFast else { return [] }
        return nodes[join].members.filter { !nodes[$0].status.isFinal }
    }

    /// The join whose quorum (or deadline) cancelled a member: one it, or its group, counts for that has completed.
    func cancellingJoin(of index: Int) -> Int? {
        let joins = nodes[index].joins + (nodes[index].group.map { nodes[$0].joins } ?? [])
        var join = joins.first { nodes[$0].status.isFinal }
        // A join cancelled as not needed itself: the outer join whose quorum was met.
        var seen: Set<Int> = []
        while let current = join, nodes[current].status == .cancelled, nodes[current].cancelReason == .joinSettled,
              seen.insert(current).inserted, let outer = nodes[current].joins.first(where: { nodes[$0].status.isFinal }) {
            join = outer
        }
        return join
    }
}
