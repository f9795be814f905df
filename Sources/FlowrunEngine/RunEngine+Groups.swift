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
            switch fanOutItems(fanOut.source, group: index) {
            case .success(let items):
                var names = MemberNames()
                for (offset, item) in items.enumerated() {
                    addFanOutMember(
                        group: index, template: fanOut.template, demand: fanOut.demand, timeout: fanOut.timeout, item: item, index: offset,
                        names: &names)
                }
            case .failure(let error):
                // The items could not be read: the group fails without running anything.
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

    private func addFanOutMember(
        group: Int, template shared: Shared<TaskDefinition>, demand: SlotPool.Demand, timeout: Duration?, item: String, index: Int,
        names: inout MemberNames
    ) {
        let template = shared.value
        let groupName = nodes[group].name
        var name = "\(groupName)[\(index)]"
        if let nameTemplate = template.nameTemplate,
           let rendered = try? renderText(nameTemplate, for: nil, item: item, index: index), !rendered.isEmpty {
            // A name that cannot be made (a NUL byte) or is empty keeps the GROUP[INDEX] form.
            name = rendered
        }
        name = names.unique(name) { indexByName[$0] != nil }
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

    /// Items of a fan-out: a literal list, a range, or a run-time value.
    private func fanOutItems(_ source: FanOutSource, group: Int) -> Result<[String], FanOutError> {
        switch source {
        case .list(let items):
            return .success(items)
        case .range(let low, let high):
            return .success((low...high).map(String.init))
        case .expression(let template):
            if let target = wholeStdoutSource(template) {
                // Read whole, however long: from disk when the stash kept only its end.
                guard let oversized = nodes[target].stash.oversizedStdout?.value else {
                    return .success(FanOutItems.parse(nodes[target].stash.stdout))
                }
                guard let file = oversized.file else {
                    // An HTTP body past 1 MiB is whole only in the log, mixed with its status line.
                    return .failure(FanOutError(message: "\(nodes[target].name)'s stdout is \(ValueLimit.mebibytes(oversized.byteCount)) and was not kept whole (an HTTP body over 1 MiB): write it to a file instead"))
                }
                do throws(FanOutFileError) {
                    return .success(try FanOutItems.parse(contentsOf: file))
                } catch {
                    return .failure(FanOutError(message: error.message))
                }
            }
            do throws(TemplateRenderError) {
                return .success(FanOutItems.parse(try renderText(template, for: group)))
            } catch {
                return .failure(FanOutError(message: error.message))
            }
        }
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
