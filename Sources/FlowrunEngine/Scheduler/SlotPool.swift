/// The limits a task must hold all at once while it runs: a run slot, a slot
/// of its group, and weighted slots of named semaphores (SPEC §4 "Limits nest").
///
/// Acquisition is all-or-nothing, so no task ever holds a slot while waiting
/// for another and no deadlock is possible whatever the declaration order.
/// Fairness is first-come-first-served per resource: a waiter that cannot
/// start claims the resources it lacks, and later waiters may not take those
/// until it has started. Waiters with identical needs share one FIFO bucket,
/// so a 100,000-member fan-out behind one group limit costs O(1) per release.
///
/// Not thread-safe: owned by the engine's serial queue.
struct SlotPool {
    /// What one task needs: resource index → amount, kept sorted by
    /// resource (hashed and compared on every admission: an array of a few
    /// pairs is far cheaper to hash than a dictionary).
    struct Demand: Hashable {
        private(set) var resources: [Int] = []
        private(set) var amounts: [Int] = []

        init(amounts byResource: [Int: Int]) {
            for (resource, amount) in byResource.sorted(by: { $0.key < $1.key }) {
                resources.append(resource)
                amounts.append(amount)
            }
        }

        /// The amount of `resource` asked for, nil if none.
        func amount(of resource: Int) -> Int? {
            resources.firstIndex(of: resource).map { amounts[$0] }
        }

        var pairs: Zip2Sequence<[Int], [Int]> { zip(resources, amounts) }
    }

    private var free: [Int]
    private var capacity: [Int]
    private var names: [String]
    /// Buckets of waiters with the same demand, each FIFO, with arrival numbers.
    private var buckets: [Demand: Bucket] = [:]
    private var arrival = 0

    private struct Bucket {
        var waiters: [(ticket: Int, waiter: Int)] = []
        var head = 0
        var isEmpty: Bool { head >= waiters.count }

        mutating func popFirst() -> Int? {
            guard !isEmpty else { return nil }
            defer {
                head += 1
                if head > 1024, head * 2 > waiters.count {
                    waiters.removeFirst(head)
                    head = 0
                }
            }
            return waiters[head].waiter
        }
    }

    /// `capacities[i]` is the size of resource `i`, named `names[i]` for reports.
    init(capacities: [Int], names: [String]) {
        capacity = capacities
        free = capacities
        self.names = names
    }

    /// A resource made during the run (a pool of a semaphore family, when a
    /// task first names it); its index.
    mutating func addResource(capacity size: Int, name: String) -> Int {
        capacity.append(size)
        free.append(size)
        names.append(name)
        return capacity.count - 1
    }

    /// Resource index of a name, for building demands.
    func index(of name: String) -> Int? { names.firstIndex(of: name) }

    func name(of resource: Int) -> String { names[resource] }
    func capacity(of resource: Int) -> Int { capacity[resource] }
    func inUse(_ resource: Int) -> Int { capacity[resource] - free[resource] }

    /// Queues a waiter (an opaque number, e.g. a task index).
    mutating func enqueue(_ waiter: Int, demand: Demand) {
        arrival += 1
        // One bucket with this demand already (a fan-out's members): found
        // by comparing, not hashing, the demand.
        if buckets.count == 1, buckets.keys[buckets.startIndex] == demand {
            buckets.values[buckets.startIndex].waiters.append((arrival, waiter))
            return
        }
        buckets[demand, default: Bucket()].waiters.append((arrival, waiter))
    }

    /// Takes the slots of the first waiter (in arrival order) that can start
    /// now, and returns it; nil when none can. Called until nil, it admits
    /// what one pass over the waiters would, one at a time, with no array
    /// made for them.
    mutating func admitNext() -> Int? {
        guard !buckets.isEmpty else { return nil }
        if buckets.count == 1 { return admitAlone() }
        var claimed = Set<Int>()
        var blocked = Set<Demand>()
        while true {
            // The earliest waiter among the buckets not yet blocked.
            var next: (demand: Demand, ticket: Int)?
            for (demand, bucket) in buckets where !bucket.isEmpty && !blocked.contains(demand) {
                let ticket = bucket.waiters[bucket.head].ticket
                if ticket < next?.ticket ?? .max { next = (demand, ticket) }
            }
            guard let demand = next?.demand else { return nil }
            let lacking = demand.pairs.filter { free[$0.0] < $0.1 }.map(\.0)
            if !lacking.isEmpty || demand.resources.contains(where: claimed.contains) {
                claimed.formUnion(lacking)
                blocked.insert(demand)
                continue
            }
            for (resource, amount) in demand.pairs { free[resource] -= amount }
            let waiter = buckets[demand]?.popFirst()
            if buckets[demand]?.isEmpty == true { buckets[demand] = nil }
            if let waiter { return waiter }
        }
    }

    /// Every waiter that can start now, in arrival order (`admitNext` until nil).
    mutating func admit() -> [Int] {
        var started: [Int] = []
        while let next = admitNext() { started.append(next) }
        return started
    }

    /// `admitNext` when every waiter has the same demand (a flat run, one
    /// fan-out): first come, first served, with no other bucket to weigh
    /// against. The bucket is changed in place, by position: no demand hashed.
    private mutating func admitAlone() -> Int? {
        let only = buckets.startIndex
        let demand = buckets.keys[only]
        guard demand.pairs.allSatisfy({ free[$0.0] >= $0.1 }), let waiter = buckets.values[only].popFirst() else { return nil }
        for (resource, amount) in demand.pairs { free[resource] -= amount }
        if buckets.values[only].isEmpty { buckets.remove(at: only) }
        return waiter
    }

    /// Gives back what a started waiter held.
    mutating func release(_ demand: Demand) {
        for (resource, amount) in demand.pairs {
            free[resource] += amount
            precondition(free[resource] <= capacity[resource], "slot of \(names[resource]) released twice")
        }
    }

    /// Drops a waiter that will not start after all (cancelled while waiting).
    mutating func remove(_ waiter: Int, demand: Demand) {
        guard var bucket = buckets[demand] else { return }
        if let position = bucket.waiters[bucket.head...].firstIndex(where: { $0.waiter == waiter }) {
            bucket.waiters.remove(at: position)
        }
        buckets[demand] = bucket.isEmpty ? nil : bucket
    }

    /// What a waiting demand lacks right now, for "waiting: db 1/1".
    func shortage(of demand: Demand) -> [(resource: Int, name: String, inUse: Int, capacity: Int)] {
        demand.pairs.filter { free[$0.0] < $0.1 }.map { resource, _ in
            (resource, names[resource], capacity[resource] - free[resource], capacity[resource])
        }
    }
}
