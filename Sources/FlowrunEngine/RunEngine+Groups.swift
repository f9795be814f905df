import FlowrunModel
import FlowrunValues

/// Groups: starting (expanding a fan-out), deadlines, and the status rules of SPEC §4.
extension RunEngine {
    /// The group's needs succeeded: create fan-out members, start the deadline, release members.
    func activateGroup(_ index: Int) {
        guard nodes[index].kind == .group else { return }
        nodes[index].status = .running
        nodes[index].startedAt = elapsed
        if let fanOut = fanOuts[index] {
            let named = fanOutItems(fanOut.source, split: fanOut.split, group: index).flatMap { items in
                memberNames(of: index, fanOut: fanOut, items: items).map { (items, $0) }
            }
            switch named {
            case .success(let (items, names)):
                var previous = fanOut.runsAfter
                // Items that targets left out get no member; the others keep the
                // names they have in a whole run.
                for (offset, item) in items.enumerated() where fanOut.items?.contains(offset) ?? true {
                    let member = addFanOutMember(
                        group: index, template: fanOut.template, demand: fanOut.demand, timeout: fanOut.timeout, item: item, index: offset,
                        name: names[offset])
                    if fanOut.sequential {
                        if let previous { waitInSequence(member, after: previous) }
                        previous = member
                    }
                }
            case .failure(let error):
                // The items could not be read or named: the group fails without running anything.
                nodes[index].status = .pending
                for member in nodes[index].members { settle(member, .skipped, why: "foreach failed") }
                settle(index, .failed, why: "foreach: \(error.message)")
                return
            }
        }
        let members = nodes[index].members
        nodes[index].unsettledMembers = members.count
        if let timeout = nodes[index].timeout {
            startTimer(.group(index), after: timeout) { $0.groupTimedOut(index) }
        }
        if members.isEmpty {
            settle(index, .succeeded, why: "no members")
            return
        }
        for member in members {
            nodes[member].unsettledNeeds -= 1
            if nodes[member].unsettledNeeds == 0 { needsSettled(member) }
        }
    }

    @discardableResult
    private func addFanOutMember(
        group: Int, template shared: Shared<TaskDefinition>, demand: SlotPool.Demand, timeout: Duration?, item: FanOutItem, index: Int,
        name: String
    ) -> Int {
        let template = shared.value
        let groupName = nodes[group].name
        var node = RunNode(kind: .task, name: name)
        node.definition = shared
        node.item = item
        node.index = index
        node.group = group
        let own = template.needs.map(\.value).filter { $0 != groupName }
        node.needs = own.compactMap { indexByName[$0] }
        node.demand = demand
        node.timeout = timeout
        let member = add(node)
        nodes[group].members.append(member)
        var unsettled = 1
        for need in nodes[member].needs where !nodes[need].status.isFinal {
            nodes[need].dependents.append(member)
            unsettled += 1
        }
        nodes[member].unsettledNeeds = unsettled
        // Members count toward the group's joins too (the harmonizer's count-up).
        unsettledMain += 1
        return member
    }

    func memberSettled(_ group: Int) {
        guard nodes[group].kind == .group, nodes[group].status == .running else { return }
        nodes[group].unsettledMembers -= 1
        guard nodes[group].unsettledMembers == 0 else { return }
        cancelTimer(.group(group))
        // By index: a fan-out's members can be 100,000 nodes, too many to copy.
        let members = nodes[group].members
        if nodes[group].groupTimedOut {
            settle(group, .timedOut, why: "deadline passed")
        } else if members.contains(where: { nodes[$0].isFailure && !(nodes[$0].definition?.value.continueOnError ?? false) }) {
            settle(group, .failed, why: "a member failed")
        } else if let stop = members.lazy.compactMap({ self.nodes[$0].cancelReason }).first(where: { $0 != .joinSettled }) {
            settle(group, .cancelled, reason: stop)
        } else if !members.isEmpty, members.allSatisfy({ nodes[$0].status == .skipped }) {
            // SPEC §10: what needs it is skipped, as after a skipped task.
            settle(group, .skipped, why: "every member was skipped")
        } else {
            settle(group, .succeeded)
        }
    }

    private func groupTimedOut(_ index: Int) {
        guard nodes[index].status == .running else { return }
        nodes[index].groupTimedOut = true
        for member in nodes[index].members where !nodes[member].status.isFinal {
            cancel(member, reason: .groupTimeout)
        }
    }

    /// Items of a fan-out: a literal list, a range, a matrix, or a run-time value.
    private func fanOutItems(_ source: FanOutSource, split: FanOutSplit?, group: Int) -> Result<[FanOutItem], FanOutError> {
        switch source {
        case .list(let items):
            return .success(items.map(FanOutItem.text))
        case .records(let items):
            return .success(items)
        case .range(let low, let high):
            return .success((low...high).map { .text(String($0)) })
        case .expression(let template):
            if let target = wholeStdoutSource(template) {
                // Read whole, however long: from disk when the stash kept only its end.
                guard let oversized = nodes[target].stash.oversizedStdout?.value else {
                    return .success(Self.items(nodes[target].stash.stdout, split: split))
                }
                guard let file = oversized.file else {
                    // An HTTP body past 1 MiB is whole only in the log, mixed with its status line.
                    return .failure(FanOutError(message: "\(nodes[target].name)'s stdout is \(ValueLimit.mebibytes(oversized.byteCount)) and was not kept whole (an HTTP body over 1 MiB): write it to a file instead"))
                }
                do throws(FanOutFileError) {
                    if let split { return .success(Self.items(try FanOutItems.wholeText(contentsOf: file), split: split)) }
                    return .success(try FanOutItems.items(contentsOf: file))
                } catch {
                    return .failure(FanOutError(message: error.message))
                }
            }
            do throws(TemplateRenderError) {
                return .success(Self.items(try renderText(template, for: group), split: split))
            } catch {
                return .failure(FanOutError(message: error.message))
            }
        }
    }

    private static func items(_ text: String, split: FanOutSplit?) -> [FanOutItem] {
        guard let split else { return FanOutItems.items(text) }
        return split.items(text).map(FanOutItem.text)
    }

    /// Every member's name, before any member exists: a name two members
    /// would share, or one a task, group, join or another fan-out's member
    /// already has, fails the group rather than renaming a member (a name is
    /// what targets, `groups.G.results` and the record know a member by).
    /// So does a field `item.KEY` reads that no item has.
    private func memberNames(of group: Int, fanOut: FanOut, items: [FanOutItem]) -> Result<[String], FanOutError> {
        let template = fanOut.template.value
        let groupName = nodes[group].name
        if let problem = Self.missingField(template.itemFieldOperands, in: items) { return .failure(FanOutError(message: problem)) }
        let fieldNames: Bool
        if case .records = fanOut.source { fieldNames = true } else { fieldNames = false }
        var names: [String] = []
        names.reserveCapacity(items.count)
        var firstIndex: [String: Int] = [:]
        firstIndex.reserveCapacity(items.count)
        for (offset, item) in items.enumerated() {
            var name = MemberNaming.name(
                group: groupName, item: item, index: offset, template: template.nameTemplate, fieldNames: fieldNames, axes: fanOut.axes,
                vars: plan.workflow.vars)
            if name == nil, let nameTemplate = template.nameTemplate {
                // A name that cannot be made (a NUL byte, a value over 1 MiB) or is empty keeps the GROUP[INDEX] form.
                if let rendered = try? renderText(nameTemplate, for: nil, item: item, index: offset), !rendered.isEmpty { name = rendered }
            }
            let chosen = name ?? "\(groupName)[\(offset)]"
            if let earlier = firstIndex[chosen] {
                return .failure(FanOutError(message: "items \(earlier) and \(offset) would both be named '\(chosen)'; member names must differ: give the task a name: that tells them apart (for example with ${{ index }})"))
            }
            if let taken = indexByName[chosen] {
                let owner = nodes[taken].group.map { "a member of group '\(nodes[$0].name)'" } ?? "a \(nodes[taken].kind)"
                return .failure(FanOutError(message: "item \(offset) would be named '\(chosen)', which is already the name of \(owner); member names must differ from every other name"))
            }
            firstIndex[chosen] = offset
            names.append(chosen)
        }
        return .success(names)
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
