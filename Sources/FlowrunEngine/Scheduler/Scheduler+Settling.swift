import FlowrunModel
import FlowrunEvents

/// A node becoming final, and what that decides for its group (SPEC §4's
/// status rules, §10 sequences).
extension Scheduler {
    /// Makes `index` final with `status` at `elapsed`: out of the slot
    /// queue if it waited there, its retry deadline gone, counted off its
    /// phase. False (and nothing changed) when it was final already.
    mutating func markSettled(_ index: Int, _ status: TaskStatus, at elapsed: Double) -> Bool {
        checkQueue()
        guard !nodes[index].status.isFinal else { return false }
        if nodes[index].status == .waiting, let demand = nodes[index].demand, !nodes[index].holdsSlots {
            pool.remove(index, demand: demand)
        }
        deadlines.disarm(.retry(index))
        nodes[index].status = status
        nodes[index].finishedAt = elapsed
        if nodes[index].isFinally { unsettledFinally -= 1 } else { unsettledMain -= 1 }
        return true
    }

    /// A fan-out member made now (its group has started): it waits for its
    /// own needs not yet settled, plus one for its group's start, which the
    /// caller settles; listed in its group when the group keeps its members.
    mutating func addMember(_ node: RunNode, listedInGroup: Bool) -> Int {
        let member = nodes.addMember(node)
        var unsettled = 1
        for need in nodes[member].needs where !nodes[need].status.isFinal {
            nodes[need].dependents.append(member)
            unsettled += 1
        }
        nodes[member].unsettledNeeds = unsettled
        if listedInGroup, let group = node.group { nodes[group].members.append(member) }
        unsettledMain += 1
        return member
    }

    /// A running group's deadline passed: it is marked timed out (its
    /// members, made or not, are then cancelled); false when it was not running.
    mutating func groupDeadlinePassed(_ group: Int) -> Bool {
        guard nodes[group].status == .running else { return false }
        nodes[group].groupTimedOut = true
        return true
    }

    /// How a group ends: its status and why (a cancel reason, or text).
    struct GroupOutcome: Equatable {
        var status: TaskStatus
        var why: String?
        var reason: CancelReason?
    }

    /// A group with static members, all settled: SPEC §4's status rules —
    /// timed out, failed (a member failed, not allowed to), cancelled (a
    /// member was, but not by a join's quorum), skipped (every member was,
    /// unless a sequence's members each chose to by their `if:`), else
    /// succeeded.
    func staticGroupOutcome(_ group: Int, sequential: Bool) -> GroupOutcome {
        let members = nodes[group].members
        if nodes[group].groupTimedOut { return GroupOutcome(status: .timedOut, why: "deadline passed") }
        if members.contains(where: { nodes[$0].isFailure && !(nodes[$0].definition?.value.continueOnError ?? false) }) {
            return GroupOutcome(status: .failed, why: "a member failed")
        }
        if let stop = members.lazy.compactMap({ self.nodes[$0].cancelReason }).first(where: { $0 != .joinSettled }) {
            return GroupOutcome(status: .cancelled, why: stop.rawValue, reason: stop)
        }
        if !members.isEmpty, members.allSatisfy({ nodes[$0].status == .skipped }),
           !(sequential && members.allSatisfy { nodes[$0].skippedByOwnCondition }) {
            // SPEC §10: what needs it is skipped, as after a skipped task;
            // not a sequence whose members each chose to skip: a job in
            // GitHub's sense succeeds when every step was skipped by its `if:` (SPEC §15).
            return GroupOutcome(status: .skipped, why: "every member was skipped")
        }
        return GroupOutcome(status: .succeeded)
    }

    /// What a fan-out's members came to, counted as they settled and were let go.
    struct FanOutCounts: Equatable {
        var created = 0
        var settled = 0
        var failed = 0
        var skipped = 0
        var skippedByOwnCondition = 0
        /// Why the first member (by index) cancelled other than by a join's quorum was.
        var firstStop: CancelReason?
    }

    /// A fan-out whose items are used up and whose members have all
    /// settled: SPEC §4's status rules from the counts, after a feed that
    /// failed (`feedFailure`, the reason) and a group with no member.
    func fanOutOutcome(_ group: Int, _ counts: FanOutCounts, feedFailure: String?, sequential: Bool) -> GroupOutcome {
        if let feedFailure { return GroupOutcome(status: .failed, why: feedFailure) }
        if counts.created == 0 && counts.settled == 0 { return GroupOutcome(status: .succeeded, why: "no members") }
        if nodes[group].groupTimedOut { return GroupOutcome(status: .timedOut, why: "deadline passed") }
        if counts.failed > 0 { return GroupOutcome(status: .failed, why: "a member failed") }
        if let stop = counts.firstStop { return GroupOutcome(status: .cancelled, why: stop.rawValue, reason: stop) }
        if counts.skipped == counts.settled, !(sequential && counts.skippedByOwnCondition == counts.skipped) {
            // SPEC §10: what needs it is skipped, as after a skipped task;
            // not a sequence whose members each chose to skip (SPEC §15).
            return GroupOutcome(status: .skipped, why: "every member was skipped")
        }
        return GroupOutcome(status: .succeeded)
    }

    /// A static member of a running group settled; true when it was the last.
    mutating func staticMemberSettled(_ group: Int) -> Bool {
        nodes[group].unsettledMembers -= 1
        return nodes[group].unsettledMembers == 0
    }
}
