/// Building the run's nodes from the plan.
extension RunEngine {
    static let runSlotOnly = SlotPool.Demand(amounts: [runSlots: 1])

    func buildNodes() {
        let workflow = plan.workflow
        let groupsByName = Dictionary(workflow.groups.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        // Room for every node at once: growing the array by doubling would
        // hold two copies at its peak (tens of MB at 20,000 tasks).
        nodes.reserveCapacity(plan.steps.count + plan.finallySteps.count)
        indexByName.reserveCapacity(plan.steps.count + plan.finallySteps.count)
        // Steps are read by index, field by field: a step copied out retains
        // every field it has. First every node, so needs can point forward.
        let steps = plan.steps
        for position in steps.indices {
            let name = steps[position].name
            switch steps[position].kind {
            case .task:
                var node = RunNode(kind: .task, name: name)
                node.definition = steps[position].sharedTask
                add(node)
            case .group:
                var node = RunNode(kind: .group, name: name)
                node.groupDefinition = groupsByName[name]
                add(node)
            case .join:
                var node = RunNode(kind: .join, name: name)
                node.joinDefinition = steps[position].join
                add(node)
            case .fanOut:
                break
            }
        }
        let finallySteps = plan.finallySteps
        for position in finallySteps.indices {
            var node = RunNode(kind: .task, name: finallySteps[position].name)
            node.definition = finallySteps[position].sharedTask
            node.isFinally = true
            add(node)
        }
        for (offset, group) in workflow.groups.enumerated() where group.concurrency != nil {
            guard let index = indexByName[group.name] else { continue }
            resourceOfGroup[index] = 1 + workflow.semaphores.count + workflow.groups[..<offset].filter { $0.concurrency != nil }.count
        }

        // Then the edges.
        for phase in [steps, finallySteps] {
            for position in phase.indices {
                connect(phase[position])
            }
        }
        for index in nodes.indices where nodes[index].kind != .join {
            for need in nodes[index].needs { nodes[need].dependents.append(index) }
            nodes[index].unsettledNeeds = nodes[index].needs.count + (nodes[index].group == nil ? 0 : 1)
        }
        // A join is a need of its dependents, but its own members settle it (SPEC §5).
        for index in nodes.indices where nodes[index].kind == .join {
            nodes[index].unsettledNeeds = 1
        }
        unsettledFinally = nodes.indices.count { nodes[$0].isFinally }
        unsettledMain = nodes.count - unsettledFinally
    }

    /// A step's edges: needs, group membership, join members.
    private func connect(_ step: borrowing PlanStep) {
        guard let index = indexByName[step.name] else { return }
        switch step.kind {
        case .task:
            let groupIndex = step.group.flatMap { indexByName[$0] }
            if let groupIndex {
                // A member waits for its own needs and for its group to start.
                let own = (step.sharedTask?.value.needs.map(\.value) ?? []).filter { $0 != step.group }
                nodes[index].needs = own.compactMap { indexByName[$0] }
                nodes[index].group = groupIndex
                nodes[groupIndex].members.append(index)
            } else {
                nodes[index].needs = step.needs.compactMap { indexByName[$0] }
            }
            nodes[index].demand = demand(for: step.sharedTask!.value, group: groupIndex)
        case .group:
            nodes[index].needs = step.needs.compactMap { indexByName[$0] }
        case .join:
            let members = step.members.compactMap { indexByName[$0] }
            nodes[index].members = members
            nodes[index].required = nodes[index].joinDefinition?.need.value.required(of: members.count) ?? members.count
            for member in members { nodes[member].joins.append(index) }
        case .fanOut:
            break
        }
    }

    @discardableResult
    func add(_ node: RunNode) -> Int {
        let index = nodes.count
        indexByName[node.name] = index
        nodes.append(node)
        return index
    }

    /// The slots a task holds while running: a run slot, its group's, its semaphores'.
    func demand(for task: TaskDefinition, group: Int?) -> SlotPool.Demand {
        if task.semaphores.isEmpty && group.flatMap({ resourceOfGroup[$0] }) == nil {
            return Self.runSlotOnly  // most tasks: one value shared, not built per task
        }
        var amounts = [Self.runSlots: 1]
        if let group, let resource = resourceOfGroup[group] { amounts[resource] = 1 }
        for use in task.semaphores {
            if let resource = resourceOfSemaphore[use.name] { amounts[resource, default: 0] += use.weight }
        }
        return SlotPool.Demand(amounts: amounts)
    }
}
