import FlowrunModel

/// Waiting for slots and taking them (SPEC §4 "Limits nest"): all or
/// nothing, first come first served per resource (`SlotPool`).
extension Scheduler {
    /// Queues a ready task for its slots; false when it holds none to ask for.
    mutating func enqueue(_ index: Int) -> Bool {
        checkQueue()
        guard let demand = nodes[index].demand else { return false }
        nodes[index].status = .waiting
        pool.enqueue(index, demand: demand)
        return true
    }

    /// The next waiter whose slots are all free, now holding them; nil when none is.
    mutating func admitNext() -> Int? {
        guard let index = pool.admitNext() else { return nil }
        nodes[index].holdsSlots = true
        return index
    }

    /// Gives back what a task held (its attempt ended, or a service became ready).
    mutating func releaseSlots(_ index: Int) {
        guard nodes[index].holdsSlots, let demand = nodes[index].demand else { return }
        nodes[index].holdsSlots = false
        pool.release(demand)
    }

    /// The pool resource of a semaphore name: declared, made already, or made
    /// now from the family that matches it; nil when none does.
    mutating func semaphoreResource(named name: String) -> Int? {
        if let resource = resourceOfSemaphore[name] { return resource }
        guard let family = semaphoreTable.pool(named: name) else { return nil }
        let resource = pool.addResource(capacity: family.capacity, name: "semaphore \(name)")
        resourceOfSemaphore[name] = resource
        return resource
    }

    /// Whether a task that succeeded may hand its freed slot to the next
    /// waiter before its dependents, group and joins hear of it: the next
    /// task starts sooner, and no waiter is chosen differently (dependents
    /// queue behind every waiter already there). Not when a join could
    /// complete and cancel waiters that would otherwise have started.
    func startsWaitersFirst(_ index: Int) -> Bool {
        guard nodes[index].kind == .task, nodes[index].joins.isEmpty else { return false }
        guard let group = nodes[index].group else { return true }
        return nodes[group].joins.isEmpty
    }

    /// Members of a fan-out unsettled at once: the slots its members can
    /// hold at most (the run's, their group limit's, their semaphores'),
    /// and 16 more waiting, so a freed slot always has a member to take it.
    func fanOutWindow(for demand: SlotPool.Demand) -> Int {
        var slots = Int.max
        for (resource, amount) in demand.pairs where amount > 0 {
            slots = min(slots, pool.capacity(of: resource) / amount)
        }
        return min(max(slots, 1), 100_000) + 16
    }

    /// An attempt of `index` starts now (`elapsed` on the run's clock): it
    /// counts, runs, and starts the clocks of the joins waiting for it (or
    /// its group); those joins are returned, to arm their deadlines.
    mutating func markStarted(_ index: Int, at elapsed: Double) -> [Int] {
        checkQueue()
        nodes[index].attempt += 1
        nodes[index].status = .running
        if nodes[index].startedAt == nil { nodes[index].startedAt = elapsed }
        var started: [Int] = []
        for join in nodes[index].joins { startJoinClock(join, at: elapsed, into: &started) }
        if let group = nodes[index].group {
            for join in nodes[group].joins { startJoinClock(join, at: elapsed, into: &started) }
        }
        return started
    }

    /// A join's clock starts when the first of its members starts; a join
    /// that waits for joins starts their clocks too.
    private mutating func startJoinClock(_ index: Int, at elapsed: Double, into started: inout [Int]) {
        guard nodes[index].kind == .join, nodes[index].startedAt == nil else { return }
        nodes[index].startedAt = elapsed
        nodes[index].status = .running
        started.append(index)
        for join in nodes[index].joins { startJoinClock(join, at: elapsed, into: &started) }
    }
}
