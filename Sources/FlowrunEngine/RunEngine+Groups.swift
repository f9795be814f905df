import FlowrunModel
import FlowrunValues

/// Groups: starting (expanding a fan-out), deadlines, and the status rules of SPEC §4.
extension RunEngine {
    /// The group's needs succeeded: start the deadline, release its static
    /// members, or make the first of its fan-out's members.
    func activateGroup(_ index: Int) {
        guard nodes[index].kind == .group else { return }
        nodes[index].status = .running
        nodes[index].startedAt = elapsed
        if let fanOut = fanOuts[index] {
            startFanOut(index, fanOut)
            return
        }
        let members = nodes[index].members
        // Members settled already are not waited for: under `flowrun watch` a group runs
        // again with only its affected members (all of them in any ordinary run).
        let waiting = members.filter { !nodes[$0].status.isFinal }
        nodes[index].unsettledMembers = waiting.count
        if let timeout = nodes[index].timeout {
            startTimer(.group(index), after: timeout) { $0.groupTimedOut(index) }
        }
        if members.isEmpty {
            settle(index, .succeeded, why: "no members")
            return
        }
        if waiting.isEmpty {
            membersAllSettled(index)
            return
        }
        for member in waiting where scheduler.needSettled(member) {
            needsSettled(member)
        }
    }

    /// Checks the fan-out's items and names, then makes its first members:
    /// the rest are made as these settle (`refillFanOut`).
    private func startFanOut(_ index: Int, _ fanOut: FanOut) {
        let problem: String?
        switch fanOutFeed(fanOut.source, split: fanOut.split, group: index) {
        case .failure(let error):
            problem = error.message
        case .success(let feed):
            let makeFeed = { (try? self.fanOutFeed(fanOut.source, split: fanOut.split, group: index).get()) ?? FanOutFeed(.items([])) }
            if let missing = missingFieldProblem(fanOut, feed: feed, makeFeed: makeFeed) {
                problem = missing
            } else {
                problem = memberNameProblem(group: index, fanOut: fanOut, makeFeed: makeFeed)
            }
            if problem == nil {
                let window = fanOut.sequential ? 2 : scheduler.fanOutWindow(for: fanOut.demand)
                fanOutProgress[index] = FanOutProgress(
                    feed: feed, window: window, keepsMembers: groupsWithMembersRead.contains(nodes[index].name),
                    groupResource: resourceOfGroup[nodes[index].name])
            }
        }
        if let problem {
            // The items could not be read or named: the group fails without running anything.
            nodes[index].status = .pending
            settle(index, .failed, why: "foreach: \(problem)")
            return
        }
        if let timeout = nodes[index].timeout {
            startTimer(.group(index), after: timeout) { $0.groupTimedOut(index) }
        }
        // Static members the group lists beside its `foreach` start with it.
        let members = nodes[index].members
        fanOutProgress[index]?.unsettled = members.count
        fanOutProgress[index]?.staticMembers = members.count
        for member in members where scheduler.needSettled(member) {
            needsSettled(member)
        }
        refillFanOut(index)
    }

    /// `no item has the field …` when the template reads a field no item
    /// has; text items (lines, a range) have none, so their first tells.
    private func missingFieldProblem(_ fanOut: FanOut, feed: FanOutFeed, makeFeed: () -> FanOutFeed) -> String? {
        let operands = fanOut.template.value.itemFieldOperands
        guard !operands.isEmpty else { return nil }
        if let items = feed.inMemoryItems { return Self.missingField(operands, in: items) }
        if feed.isStreamedJSON {
            // A pass of its own: which fields some element has, and the first 100 elements for the message.
            var sample: [FanOutItem] = []
            var present = [Bool](repeating: false, count: operands.count)
            var pass = makeFeed()
            while let item = pass.next() {
                if sample.count < 100 { sample.append(item) }
                for (position, operand) in operands.enumerated() where !present[position] {
                    if case .itemField(let path) = operand.path, item.field(at: path) != nil { present[position] = true }
                }
            }
            for (position, operand) in operands.enumerated() where !present[position] { return Self.missingField([operand], in: sample) }
            return nil
        }
        return feed.isEmpty ? nil : Self.missingField(operands, in: [.text("")])
    }

    /// Makes members while the window has room (or, once the group or run is
    /// stopping, every member left, each cancelled at once), then settles the
    /// group when its items are used up and every member has settled.
    func refillFanOut(_ group: Int) {
        guard let progress = fanOutProgress[group], !progress.refilling, let fanOut = fanOuts[group] else { return }
        progress.refilling = true
        while !progress.exhausted, nodes[group].status == .running {
            let draining = progress.drainReason != nil || stopping != nil || nodes[group].groupTimedOut
            if !draining && progress.unsettled - progress.parked.count >= progress.window { break }
            if !draining && progress.parked.count >= FanOutProgress.maximumParked { break }
            guard let item = progress.feed.next() else {
                progress.exhausted = true
                break
            }
            let offset = progress.feed.offset - 1
            // Items that targets left out get no member; the others keep the names they have in a whole run.
            if let selected = fanOut.items, !selected.contains(offset) { continue }
            let name = memberName(group: group, fanOut: fanOut, item: item, index: offset)
            let member = addFanOutMember(group: group, fanOut: fanOut, item: item, index: offset, name: name)
            progress.created += 1
            progress.unsettled += 1
            progress.names.appendQuoted(name, in: record)
            if secretMasker == nil {
                progress.items.appendQuoted(item.text, in: record)
            } else {
                var itemText = progress.created > 1 ? "," : ""
                JSONValue.writeQuoted(item.text, to: &itemText)
                progress.items.append(shown(json: Array(itemText.utf8)), in: record)
            }
            if progress.created > FanOutProgress.plainRowsKeptUpTo, progress.heldRows != nil {
                // A big fan-out: its plain successes are left out of the summary (the group lists them).
                for held in progress.heldRows!.sorted(by: { $0.member < $1.member }) {
                    if let plain = held.plain { progress.leaveOutRow(of: plain) } else { appendSummaryRow(held.row) }
                }
                progress.heldRows = nil
            }
            let retiring = progress.retireWhenNextMade
            progress.retireWhenNextMade = nil
            if fanOut.sequential, let previous = progress.previous ?? fanOut.runsAfter { waitInSequence(member, after: previous) }
            progress.previous = member
            if let reason = progress.drainReason {
                nodes[member].unsettledNeeds = 0
                settle(member, .cancelled, reason: reason)
            } else {
                if scheduler.needSettled(member) { needsSettled(member) }
            }
            if let retiring { retireMember(retiring) }
        }
        progress.refilling = false
        if progress.exhausted && progress.unsettled == 0 && nodes[group].status == .running { fanOutSettled(group, progress) }
    }

    private func addFanOutMember(group: Int, fanOut: FanOut, item: FanOutItem, index: Int, name: String) -> Int {
        let groupName = nodes[group].name
        var node = RunNode(kind: .task, name: name)
        node.definition = fanOut.template
        node.item = item
        node.index = index
        node.group = group
        let template = fanOut.template.value
        if template.needs.count > 1 || template.needs.first?.value != groupName {
            node.needs = template.needs.map(\.value).filter { $0 != groupName }.compactMap { indexByName[$0] }
        }
        node.demand = fanOut.demand
        node.timeout = fanOut.timeout
        return scheduler.addMember(node, listedInGroup: fanOutProgress[group]?.keepsMembers == true)
    }

    /// A fan-out member has settled: counted, then let go unless something
    /// will read it (see `FanOutProgress.keepsMembers`).
    private func fanOutMemberSettled(_ group: Int, _ member: Int, _ progress: FanOutProgress) {
        progress.unsettled -= 1
        progress.parked.remove(member)
        progress.settled += 1
        switch nodes[member].status {
        case .succeeded: progress.succeeded += 1
        case .skipped:
            progress.skipped += 1
            if nodes[member].skippedByOwnCondition { progress.skippedByOwnCondition += 1 }
        default: break
        }
        if nodes[member].isFailure && !(nodes[member].definition?.value.continueOnError ?? false) { progress.failed += 1 }
        if let reason = nodes[member].cancelReason, reason != .joinSettled, member < (progress.firstStop?.member ?? Int.max) {
            progress.firstStop = (member, reason)
        }
        refillFanOut(group)
    }

    /// SPEC §4's status rules from the counts.
    private func fanOutSettled(_ group: Int, _ progress: FanOutProgress) {
        cancelTimer(.group(group))
        writeHeldRows(progress)
        let counts = Scheduler.FanOutCounts(
            created: progress.created, settled: progress.settled, failed: progress.failed, skipped: progress.skipped,
            skippedByOwnCondition: progress.skippedByOwnCondition, firstStop: progress.firstStop?.reason)
        let outcome = scheduler.fanOutOutcome(
            group, counts, feedFailure: progress.feed.failure.map { "foreach: \($0)" }, sequential: sequentialGroups.contains(group))
        if let reason = outcome.reason {
            settle(group, outcome.status, reason: reason)
        } else {
            settle(group, outcome.status, why: outcome.why)
        }
    }

    /// A member's row goes to the summary's spill; its node is let go unless
    /// the group keeps its members, or it is the last of a sequence (the
    /// next member, not made yet, reads it).
    func retireMember(_ index: Int) {
        guard nodes.contains(index), let group = nodes[index].group, let progress = fanOutProgress[group] else { return }
        if progress.keepsMembers { return }
        // A member serving still has its process: retired when it ends (`serviceEnded`).
        if isServing(index) { return }
        if fanOuts[group]?.sequential == true, progress.previous == index, !progress.exhausted {
            progress.retireWhenNextMade = index
            return
        }
        nodes.retire(index)
    }

    /// `flowrun watch`: a fan-out runs again from its first item: its members
    /// of the run before let go, its progress and its names forgotten.
    func resetFanOutForNextRun(_ group: Int) {
        for member in nodes.liveMembers where nodes[member].group == group { nodes.retire(member) }
        let planNodes = nodes.count
        nodes[group].members.removeAll { $0 >= planNodes }  // made members kept for a join or `results`
        fanOutProgress[group] = nil
        madeMemberNames.removeAll { $0.index == group }
    }

    /// Counts the member for the run's totals and writes its summary row
    /// (once, when it settles) — or, in a fan-out past
    /// `FanOutProgress.plainRowsKeptUpTo` members, leaves out the row of a
    /// plain success: the group's `members` and `items` say all it would.
    func recordSettledMember(_ index: Int) {
        let status = nodes[index].status
        settledMemberCounts[status, default: 0] += 1
        if status.isFailure && !(nodes[index].definition?.value.continueOnError ?? false) { settledMemberFailed = true }
        if watchState != nil, let group = nodes[index].group { watchCountsMember(index, group: group) }
        guard let progress = nodes[index].group.flatMap({ fanOutProgress[$0] }) else { return }
        let plain = plainSuccess(index)
        if progress.heldRows != nil {
            progress.heldRows!.append((index, shown(json: taskObject(index)), plain))
        } else if let plain {
            progress.leaveOutRow(of: plain)
        } else {
            appendSummaryRow(shown(json: taskObject(index)))
        }
    }

    func appendSummaryRow(_ row: [UInt8]) {
        summaryRows.append(Array(((summaryRows.byteCount > 0 ? ",\n" : "")).utf8) + row, in: record)
    }

    /// The held rows of a small fan-out, into the summary.
    func writeHeldRows(_ progress: FanOutProgress) {
        guard let held = progress.heldRows, !held.isEmpty else { return }
        for entry in held.sorted(by: { $0.member < $1.member }) { appendSummaryRow(entry.row) }
        progress.heldRows = []
    }

    /// Succeeded on its first attempt (or restored by `resume`, or up to
    /// date, without running), printed nothing, wrote no outputs, exit 0:
    /// a row would say only its name and item. Nil for any other member.
    func plainSuccess(_ index: Int) -> FanOutProgress.PlainSuccess? {
        guard nodes[index].status == .succeeded && nodes[index].attempt <= 1 && !nodes[index].hasLog
            && nodes[index].stash.stdout.isEmpty && nodes[index].stash.outputs.isEmpty && nodes[index].stash.oversizedStdout == nil
            && (nodes[index].stash.exitCode ?? 0) == 0 && nodes[index].cancelReason == nil else { return nil }
        return nodes[index].reused.map { .reused($0) } ?? .ran
    }

    func memberSettled(_ group: Int, member: Int) {
        guard nodes[group].kind == .group, nodes[group].status == .running else { return }
        if let progress = fanOutProgress[group] {
            fanOutMemberSettled(group, member, progress)
            return
        }
        guard scheduler.staticMemberSettled(group) else { return }
        membersAllSettled(group)
    }

    /// A static group's members have all settled: its own status from theirs (`Scheduler.staticGroupOutcome`).
    private func membersAllSettled(_ group: Int) {
        cancelTimer(.group(group))
        let outcome = scheduler.staticGroupOutcome(group, sequential: sequentialGroups.contains(group))
        if let reason = outcome.reason {
            settle(group, outcome.status, reason: reason)
        } else {
            settle(group, outcome.status, why: outcome.why)
        }
    }

    private func groupTimedOut(_ index: Int) {
        guard scheduler.groupDeadlinePassed(index) else { return }
        for member in members(of: index) where !nodes[member].status.isFinal {
            cancel(member, reason: .groupTimeout)
        }
        // Members not made yet are made cancelled, then the group settles.
        refillFanOut(index)
    }

    /// The members of a group alive now: its static members, or a fan-out's unsettled ones.
    func members(of group: Int) -> [Int] {
        guard let progress = fanOutProgress[group] else { return nodes[group].members }
        // Static (and kept) members are listed; members let go when settled are found among the live ones.
        let listed = nodes[group].members
        guard !progress.keepsMembers else { return listed }
        return listed + nodes.liveMembers.filter { nodes[$0].group == group }
    }

    /// Items of a fan-out as a feed: a literal list, a range, a matrix, or a run-time value.
    func fanOutFeed(_ source: FanOutSource, split: FanOutSplit?, group: Int) -> Result<FanOutFeed, FanOutError> {
        // Only static items can be named as targets: the feed hands out those alone.
        let selected = fanOuts[group]?.items
        switch source {
        case .list(let items):
            return .success(FanOutFeed(.texts(items), selecting: selected))
        case .records(let items):
            return .success(FanOutFeed(.items(items), selecting: selected))
        case .range(let low, let high):
            return .success(FanOutFeed(.range(low, high), selecting: selected))
        case .expression(let template):
            if let target = wholeStdoutSource(template) {
                // Read whole, however long: from disk when the stash kept only its end.
                guard let oversized = nodes[target].stash.oversizedStdout?.value else {
                    return .success(Self.feed(nodes[target].stash.stdout, split: split))
                }
                guard let file = oversized.file else {
                    // An HTTP body past 1 MiB is whole only in the log, mixed with its status line.
                    return .failure(FanOutError(message: "\(nodes[target].name)'s stdout is \(ValueLimit.mebibytes(oversized.byteCount)) and was not kept whole (an HTTP body over 1 MiB): write it to a file instead"))
                }
                do throws(FanOutFileError) {
                    if let split { return .success(FanOutFeed(.texts(split.items(try FanOutItems.wholeText(contentsOf: file))))) }
                    let lines = try FanOutLines(contentsOf: file)
                    // A JSON array is read whole (its elements are the items); lines one at a time.
                    if try lines.firstNonBlankByte() == UInt8(ascii: "["), let count = try Self.jsonElementCount(file) {
                        return .success(FanOutFeed(.json(try FanOutJSONElements(contentsOf: file), count: count)))
                    }
                    return .success(FanOutFeed(.lines(lines)))
                } catch {
                    return .failure(FanOutError(message: error.message))
                }
            }
            do throws(TemplateRenderError) {
                return .success(Self.feed(try renderText(template, for: group), split: split))
            } catch {
                return .failure(FanOutError(message: error.message))
            }
        }
    }

    /// How many elements the file's JSON array has, read through once
    /// (nothing kept); nil when the text is not one JSON array — then its
    /// lines are the items, as for a stdout in memory.
    private static func jsonElementCount(_ file: String) throws(FanOutFileError) -> Int? {
        let elements = try FanOutJSONElements(contentsOf: file)
        var count = 0
        while true {
            do throws(FanOutJSONElements.Failure) {
                guard try elements.next() != nil else { return count }
                count += 1
            } catch {
                switch error {
                case .read(let problem): throw problem
                case .notAnArray: return nil
                }
            }
        }
    }

    static func feed(_ text: String, split: FanOutSplit?) -> FanOutFeed {
        if let split { return FanOutFeed(.texts(split.items(text))) }
        if let first = text.utf8.first(where: { !ExpressionValue.isSpace($0) }), first == UInt8(ascii: "[") {
            return FanOutFeed(.items(FanOutItems.items(text)))
        }
        return FanOutFeed(.lines(FanOutLines(text: text)))
    }

    /// "no item has the field …" for the first `item.KEY` that no item has.
    static func missingField(_ operands: [Operand], in items: [FanOutItem]) -> String? {
        guard !items.isEmpty else { return nil }
        for operand in operands {
            guard case .itemField(let path) = operand.path, !items.contains(where: { $0.field(at: path) != nil }) else { continue }
            var keys: [String] = []
            for item in items.prefix(100) {
                for field in item.field(at: Array(path.dropLast()))?.fields ?? [] where !keys.contains(field.key) { keys.append(field.key) }
            }
            let known = keys.isEmpty ? "the items have no fields there (they are \(items.contains { $0.fields.isEmpty } ? "text" : "records"))" : "the items' fields are \(keys.joined(separator: ", "))"
            return "no item has the field '\(path.joined(separator: "."))' that ${{ \(operand.text) }} reads (\(operand.location)); \(known)"
        }
        return nil
    }
}

extension RunEngine {
    /// The task whose stdout is the whole `foreach` (`${{ tasks.T.stdout }}`,
    /// blanks around it aside): such a stdout feeds the fan-out whatever its length.
    fileprivate func wholeStdoutSource(_ template: Template) -> Int? {
        var source: Int?
        for segment in template.segments {
            switch segment {
            case .text(let text):
                guard text.utf8.allSatisfy(ExpressionValue.isSpace) else { return nil }
            case .expression(.operand(let operand), _):
                guard source == nil, case .task(let name, .stdout) = operand.path, let target = indexByName[name] else { return nil }
                source = target
            case .expression:
                return nil
            }
        }
        return source
    }
}

struct FanOutError: Error {
    var message: String
}
