import FlowrunEvents

/// Joins (SPEC §5): complete at quorum and cancel the rest, fail when the
/// quorum is out of reach, or stop waiting at the deadline with partial results.
extension RunEngine {
    /// A join's clock started (`Scheduler.markStarted`): its deadline, if it has one.
    func armJoinDeadline(_ index: Int) {
        if let timeout = nodes[index].timeout {
            startTimer(.join(index), after: timeout) { $0.joinTimedOut(index) }
        }
    }

    /// `flowrun watch`: the join runs again, its clock, deadline and counts
    /// as before its first member started; members that do not run again
    /// count as they ended in the run before.
    func resetJoinForNextRun(_ index: Int, rerunning: Set<Int>) {
        cancelTimer(.join(index))
        nodes[index].status = .pending
        (nodes[index].startedAt, nodes[index].finishedAt, nodes[index].cancelReason) = (nil, nil, nil)
        nodes[index].joinTimedOut = false
        nodes[index].succeededMembers = 0
        nodes[index].settledMembers = nodes[index].members.count { !rerunning.contains($0) && nodes[$0].status.isFinal }
    }

    /// `flowrun watch`: a join run again whose members kept from the run
    /// before (not run again, counted as succeeded) already meet its quorum
    /// completes before any member starts. Those that would run again end
    /// `cancelled`, not needed, as a fresh run's members past a met quorum;
    /// a rerun's failure could otherwise fail the run under a join that says succeeded.
    func completeJoinByKeptResults(_ index: Int) {
        guard nodes[index].kind == .join, nodes[index].status == .pending, nodes[index].required > 0 else { return }
        let members = nodes[index].members
        let kept = members.count { nodes[$0].status.isFinal && scheduler.countsAsSucceeded($0) && !wasNotNeeded($0) }
        guard kept >= nodes[index].required else { return }
        nodes[index].succeededMembers = kept
        completeJoin(index, Scheduler.JoinVerdict(status: .succeeded, why: "\(kept)/\(members.count) succeeded"))
    }

    func joinMemberSettled(_ index: Int) {
        if let verdict = scheduler.joinMemberSettled(index) { completeJoin(index, verdict) }
    }

    /// Joins with nothing to wait for complete at once.
    func settleEmptyJoins() {
        for index in scheduler.emptyJoins() where nodes[index].status == .pending {
            completeJoin(index, Scheduler.JoinVerdict(status: .succeeded, why: "nothing to wait for"))
        }
    }

    private func joinTimedOut(_ index: Int) {
        if let verdict = scheduler.joinDeadlinePassed(index) { completeJoin(index, verdict) }
    }

    /// Settles the join, then cancels the members it no longer waits for (`Scheduler.losers`).
    private func completeJoin(_ index: Int, _ verdict: Scheduler.JoinVerdict) {
        cancelTimer(.join(index))
        let losers = scheduler.losers(of: index, completingAs: verdict.status, failFast: plan.workflow.failFast)
        settle(index, verdict.status, why: verdict.why)
        for member in losers where !nodes[member].status.isFinal {
            cancel(member, reason: .joinSettled)
        }
    }

    func emitJoinCompleted(_ index: Int, status: TaskStatus) {
        let node = nodes[index]
        var completed = RunEvent.JoinCompleted(
            join: node.name, status: status, members: node.members.count,
            succeeded: node.members.count { nodes[$0].status == .succeeded }, required: node.required,
            timedOut: node.joinTimedOut, duration: node.startedAt.map { elapsed - $0 } ?? 0,
            missing: node.members.filter { !nodes[$0].status.isFinal }.map { nodes[$0].name }, report: joinReport(index))
        var report = memberReport(index, status: status, duration: completed.duration, missing: node.joinTimedOut ? completed.missing : [])
        // The whole report goes to the record first; the event carries it capped, pointing there.
        report.path = record.joinReportPath(for: node.name)
        if record.writeJoinReport(shown(json: report.json()), for: node.name) != nil { report.path = nil }
        completed.joinReport = report
        emit(event(.joinCompleted(completed)))
    }

    /// The join's members one by one (a group's members each), with their
    /// stashes, or only what `report:` names.
    private func memberReport(_ index: Int, status: TaskStatus, duration: Double, missing: [String]) -> JoinReport {
        let node = nodes[index]
        // What `report:` selects, per member name: nil shows every member's whole stash.
        var selected: [String: [String]]?
        if let items = node.joinDefinition?.report {
            var fields: [String: [String]] = [:]
            let names = node.members.map { nodes[$0].name }
            for item in items {
                // Member names may hold dots: the longest member name the entry starts with.
                guard let name = names.filter({ item.text.hasPrefix($0 + ".") }).max(by: { $0.count < $1.count }) else { continue }
                fields[name, default: []].append(String(item.text.dropFirst(name.count + 1)))
            }
            selected = fields
        }
        var members: [JoinReport.Member] = []
        for member in node.members {
            let fields = selected.map { $0[nodes[member].name] ?? [] }
            if nodes[member].kind == .group {
                let showsStash = fields.map { $0.contains("results") } ?? true
                for inner in nodes[member].members {
                    members.append(reportMember(inner, group: nodes[member].name, fields: showsStash ? nil : [], joinTimedOut: node.joinTimedOut, joinStatus: status))
                }
                // Other fields of the group itself (`status`), when named.
                if let fields, fields.contains(where: { $0 != "results" }) {
                    members.append(reportMember(member, group: nil, fields: fields.filter { $0 != "results" }, joinTimedOut: node.joinTimedOut, joinStatus: status))
                }
            } else {
                members.append(reportMember(member, group: nil, fields: fields, joinTimedOut: node.joinTimedOut, joinStatus: status))
            }
        }
        return JoinReport(name: node.name, status: status, timedOut: node.joinTimedOut, counted: node.members.count,
                          succeeded: node.members.filter { nodes[$0].status == .succeeded }.count, required: node.required,
                          duration: duration, missing: missing, members: members, path: nil)
    }

    /// One member's line of the report; `fields` nil means its whole stash.
    private func reportMember(_ member: Int, group: String?, fields: [String]?, joinTimedOut: Bool, joinStatus: TaskStatus) -> JoinReport.Member {
        let node = nodes[member]
        let outcome: JoinReport.Outcome
        switch node.status {
        case .succeeded: outcome = .succeeded
        case .failed, .timedOut:
            outcome = node.definition?.value.continueOnError == true ? .failedAllowed : node.status == .failed ? .failed : .timedOut
        case .cancelled: outcome = node.cancelReason == .joinSettled ? .notNeeded : .cancelled
        case .skipped: outcome = .skipped
        case .pending, .waiting, .running:
            if joinTimedOut {
                outcome = .missing
            } else if joinStatus == .succeeded || joinStatus == .cancelled {
                // A join cancelled (an outer join's quorum did not need it) cancels them next.
                outcome = .notNeeded
            } else {
                outcome = plan.workflow.failFast ? .cancelled : .stillRunning
            }
        }
        var values: [JoinReport.Value] = []
        if let fields, node.status.isFinal {
            for field in fields {
                // `outputs.path` shows as `path=…`, like the whole stash's output keys.
                let key = field.hasPrefix("outputs.") ? String(field.dropFirst("outputs.".count)) : field
                values.append(JoinReport.Value(key: key, text: stashValue(of: member, field: field) ?? "", isStdout: field == "stdout"))
            }
        } else if node.kind == .task, node.status.isFinal {
            for output in node.stash.outputs { values.append(JoinReport.Value(key: output.key, text: output.value, isStdout: false)) }
            if !node.stash.stdout.isEmpty { values.append(JoinReport.Value(key: "stdout", text: node.stash.stdout, isStdout: true)) }
        }
        let duration = node.kind == .task ? node.stash.duration : node.startedAt.map { (node.finishedAt ?? elapsed) - $0 }
        return JoinReport.Member(name: node.name, group: group, item: node.item?.text, outcome: outcome, duration: duration,
                                 values: values, log: node.hasLog ? record.logPath(index: member, name: node.name) : nil)
    }

    /// The values a join reports: its `report:` entries, or every member's stash.
    private func joinReport(_ index: Int) -> [(key: String, value: String)] {
        let node = nodes[index]
        if let items = node.joinDefinition?.report {
            return items.map { item in (item.text, reportValue(member: item.member, field: item.field, fullText: item.text, members: node.members)) }
        }
        var values: [(key: String, value: String)] = []
        // Only members that succeeded have a stash worth showing; the rest are `missing`.
        for member in node.members where nodes[member].status == .succeeded {
            let memberNode = nodes[member]
            switch memberNode.kind {
            case .task:
                values.append(("\(memberNode.name).stdout", memberNode.stash.stdout))
                for output in memberNode.stash.outputs { values.append(("\(memberNode.name).outputs.\(output.key)", output.value)) }
            case .group:
                values.append(("\(memberNode.name).results", groupResultsJSON(member)))
            case .join:
                values.append(("\(memberNode.name).status", memberNode.status.rawValue))
            }
        }
        return values
    }

    /// A report entry's value; member names may hold dots, so match against members.
    private func reportValue(member: String, field: String, fullText: String, members: [Int]) -> String {
        let match = members.map { nodes[$0].name }.filter { fullText.hasPrefix($0 + ".") }.max { $0.count < $1.count }
        guard let name = match, let memberIndex = indexByName[name] else { return "" }
        let field = String(fullText.dropFirst(name.count + 1))
        return stashValue(of: memberIndex, field: field) ?? ""
    }

    /// The join whose quorum (or deadline) cancelled a member: one it, or its group, counts for that has completed.
    func cancellingJoin(of index: Int) -> String? {
        scheduler.cancellingJoin(of: index).map { nodes[$0].name }
    }
}
