import FlowrunModel
import FlowrunValues
import FlowrunPlanning

/// Building the run's nodes from the plan.
extension RunEngine {
    static let runSlotOnly = SlotPool.Demand(amounts: [runSlots: 1])

    /// The pool's resources, all from the plan: resource 0 is the run's
    /// `max_parallel`, then each semaphore, then each group whose tasks'
    /// limits name it (with its concurrency), in step order.
    static func slotPool(for plan: Plan) -> (pool: SlotPool, semaphores: [String: Int], groups: [String: Int]) {
        // Declared CPUs in thousandths, memory in KiB (`ResourceUnits`).
        var names = ["max_parallel", "cpus", "memory"]
        var capacities = [plan.maxParallel, ResourceUnits.cpus(plan.capacity.cpus), ResourceUnits.memory(plan.capacity.memoryBytes)]
        var semaphores: [String: Int] = [:]
        var groups: [String: Int] = [:]
        // A family's pools are made as tasks name them (`semaphoreResource(named:)`).
        for semaphore in plan.semaphores where semaphores[semaphore.name] == nil && !semaphore.isFamily {
            semaphores[semaphore.name] = names.count
            names.append("semaphore \(semaphore.name)")
            capacities.append(semaphore.capacity)
        }
        // By index, field by field: a step copied out retains every field it has.
        for phase in [plan.steps, plan.finallySteps] {
            for index in phase.indices {
                guard let group = phase[index].limits?.group, groups[group.name] == nil else { continue }
                groups[group.name] = names.count
                names.append("group \(group.name)")
                capacities.append(group.concurrency)
            }
        }
        return (SlotPool(capacities: capacities, names: names), semaphores, groups)
    }

    func buildNodes() {
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
                node.timeout = steps[position].timers.timeout
                add(node)
            case .group:
                var node = RunNode(kind: .group, name: name)
                node.timeout = steps[position].timers.timeout
                add(node)
                if steps[position].sequential { sequentialGroups.insert(nodes.count - 1) }
                if steps[position].groupWhen != nil || steps[position].groupCondition != nil {
                    groupConditions[nodes.count - 1] = (steps[position].groupWhen ?? .success, steps[position].groupCondition)
                }
            case .join:
                var node = RunNode(kind: .join, name: name)
                node.joinDefinition = steps[position].join
                node.timeout = steps[position].timers.timeout
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
            node.timeout = finallySteps[position].timers.timeout
            add(node)
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
            if let previous = nodes[index].runsAfter { waitInSequence(index, after: previous) }
        }
        // A join is a need of its dependents, but its own members settle it (SPEC §5).
        for index in nodes.indices where nodes[index].kind == .join {
            nodes[index].unsettledNeeds = 1
        }
        groupsWithMembersRead = Self.groupsWithMembersRead(steps: steps, finallySteps: finallySteps)
        for position in plan.workflow.vars.indices where plan.workflow.vars[position].command != nil {
            if let index = indexByName["vars." + plan.workflow.vars[position].name] { computedVariables[index] = position }
        }
        unsettledFinally = nodes.indices.count { nodes[$0].isFinally }
        unsettledMain = nodes.count - unsettledFinally
    }

    /// A step's edges: needs, group membership, join members.
    private func connect(_ step: borrowing PlanStep) {
        if step.kind == .fanOut {
            // What every member will hold and its deadline, for when the group starts.
            if let group = step.group.flatMap({ indexByName[$0] }), let template = step.sharedTask, let source = step.fanOutSource {
                fanOuts[group] = FanOut(
                    template: template, source: source,
                    demand: demand(for: step.limits, resources: template.value.resources, onSlurm: plan.workflow.executor(of: template.value) == .slurm, fanOut: true),
                    timeout: step.timers.timeout,
                    items: step.fanOutItems.map(Set.init), runsAfter: step.runsAfter.flatMap { indexByName[$0] },
                    sequential: step.sequential, split: step.fanOutSplit, axes: step.fanOutAxes)
            }
            return
        }
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
            nodes[index].demand = demand(
                for: step.limits, resources: step.sharedTask?.value.resources,
                onSlurm: step.task.map { plan.workflow.executor(of: $0) == .slurm } ?? false, fanOut: false)
            nodes[index].runsAfter = step.runsAfter.flatMap { indexByName[$0] }
            if let reason = step.runsAfterReason { runsAfterReasons[index] = reason }
        case .group:
            nodes[index].needs = step.needs.compactMap { indexByName[$0] }
            // A later command-line target (SPEC §15).
            nodes[index].runsAfter = step.runsAfter.flatMap { indexByName[$0] }
            if let reason = step.runsAfterReason { runsAfterReasons[index] = reason }
        case .join:
            let members = step.members.compactMap { indexByName[$0] }
            nodes[index].members = members
            nodes[index].required = nodes[index].joinDefinition?.need.value.required(of: members.count) ?? members.count
            for member in members { nodes[member].joins.append(index) }
        case .fanOut:
            break
        }
    }

    /// Groups whose members' stashes are read after they settle: named by
    /// `groups.G.results` anywhere, or counted by a join (its report shows
    /// each member's stash).
    static func groupsWithMembersRead(steps: [PlanStep], finallySteps: [PlanStep]) -> Set<String> {
        var names = Set<String>()
        func note(_ operands: [Operand]) {
            for operand in operands { if case .group(let name, .results) = operand.path { names.insert(name) } }
        }
        for phase in [steps, finallySteps] {
            for position in phase.indices {
                if let task = phase[position].task {
                    for template in task.templates + task.sources + task.generates { note(template.operands) }
                    if let condition = task.condition { note(condition.value.operands) }
                }
                if case .expression(let template)? = phase[position].fanOutSource { note(template.operands) }
                if phase[position].kind == .join { names.formUnion(phase[position].members) }
            }
        }
        return names
    }

    @discardableResult
    func add(_ node: RunNode) -> Int {
        let index = nodes.append(node)
        indexByName[node.name] = index
        return index
    }

    /// A demand as the JSON of `task_started`'s `limits`, read back from the
    /// pool (the capacities it enforces), once per distinct demand.
    func limitsJSON(_ demand: SlotPool.Demand) -> String {
        if let known = limitsTexts[demand] { return known }
        let groupOfResource = Dictionary(resourceOfGroup.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let semaphoreOfResource = Dictionary(resourceOfSemaphore.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        var json = JSONObjectWriter()
        json.add("run", pool.capacity(of: Self.runSlots))
        var semaphores: [String] = []
        for (resource, amount) in demand.pairs {
            var limit = JSONObjectWriter()
            if let group = groupOfResource[resource] {
                limit.add("name", group)
                limit.add("concurrency", pool.capacity(of: resource))
                json.addRaw("group", limit.result)
            } else if let semaphore = semaphoreOfResource[resource] {
                limit.add("name", semaphore)
                limit.add("weight", amount)
                limit.add("capacity", pool.capacity(of: resource))
                semaphores.append(limit.result)
            }
        }
        if !semaphores.isEmpty { json.addRaw("semaphores", "[" + semaphores.joined(separator: ",") + "]") }
        let cpus = demand.amount(of: Self.cpuResource), memory = demand.amount(of: Self.memoryResource)
        if cpus != nil || memory != nil {
            // Declared resources, in the units people wrote (the pool holds thousandths and KiB).
            var resources = JSONObjectWriter()
            if let cpus {
                resources.add("cpus", Double(cpus) / 1000)
                resources.add("capacity_cpus", plan.capacity.cpus)
            }
            if let memory {
                resources.add("memory_bytes", memory * 1024)
                resources.add("capacity_memory_bytes", Int(plan.capacity.memoryBytes))
            }
            json.addRaw("resources", resources.result)
        }
        let text = json.result
        limitsTexts[demand] = text
        return text
    }

    /// The slots a task holds while running, as the plan gave them: a run
    /// slot, its group's, its semaphores' (weights of one semaphore named
    /// twice add up).
    ///
    /// A task on Slurm holds no run slot: the cluster's queue decides how
    /// many jobs run (`max_parallel` counts this machine's work). A fan-out
    /// member on Slurm holds no group slot either: its array's `%C` is the
    /// group's concurrency, so every ready member is submitted at once.
    /// On Slurm, declared resources become sbatch's flags: `capacity` does not apply.
    func demand(for limits: TaskLimits?, resources: ResourceRequest? = nil, onSlurm: Bool = false, fanOut: Bool = false) -> SlotPool.Demand {
        guard let limits else { return onSlurm ? SlotPool.Demand(amounts: [:]) : Self.runSlotOnly }
        if onSlurm {
            var amounts: [Int: Int] = [:]
            if !fanOut, let group = limits.group.flatMap({ resourceOfGroup[$0.name] }) { amounts[group] = 1 }
            for use in limits.semaphores where !use.isComputed {
                if let resource = semaphoreResource(named: use.name) { amounts[resource, default: 0] += use.weight }
            }
            return SlotPool.Demand(amounts: amounts)
        }
        let groupResource = limits.group.flatMap { resourceOfGroup[$0.name] }
        if !limits.semaphores.contains(where: { !$0.isComputed }) && groupResource == nil && resources == nil {
            return Self.runSlotOnly  // most tasks: one value shared, not built per task
        }
        var amounts = [Self.runSlots: 1]
        if let cpus = resources?.cpus { amounts[Self.cpuResource] = ResourceUnits.cpus(cpus) }
        if let memory = resources?.memoryBytes { amounts[Self.memoryResource] = ResourceUnits.memory(memory) }
        if let groupResource { amounts[groupResource] = 1 }
        // A computed name adds its pool when the task is ready (`withComputedSemaphores`).
        for use in limits.semaphores where !use.isComputed {
            if let resource = semaphoreResource(named: use.name) { amounts[resource, default: 0] += use.weight }
        }
        return SlotPool.Demand(amounts: amounts)
    }
}
