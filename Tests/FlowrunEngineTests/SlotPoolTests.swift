@testable import FlowrunModel
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunEngine
import FlowrunTestSupport
import Testing

/// `SlotPool`, the engine's limits (SPEC §4 "Limits nest"): a task holds
/// all its slots or none, waiters start first-come-first-served, no order of
/// declarations or demands can deadlock it, and a slot goes back once.
@Suite struct SlotPoolTests {
    /// Resource 0: 4 run slots; 1: db, 1 slot; 2: net, 2 slots.
    static func pool() -> SlotPool {
        SlotPool(capacities: [4, 1, 2], names: ["max_parallel", "semaphore db", "semaphore net"])
    }

    static let run = 0, db = 1, net = 2

    @Test func aWaiterThatCannotHaveEverythingTakesNothing() {
        var pool = Self.pool()
        let dbOnly = SlotPool.Demand(amounts: [Self.run: 1, Self.db: 1])
        let dbAndNet = SlotPool.Demand(amounts: [Self.run: 1, Self.db: 1, Self.net: 1])
        pool.enqueue(1, demand: dbOnly)
        #expect(pool.admit() == [1])
        pool.enqueue(2, demand: dbAndNet)
        #expect(pool.admit() == [])
        // Waiter 2 lacks db; it holds neither a run slot nor a net slot meanwhile.
        #expect(pool.inUse(Self.run) == 1)
        #expect(pool.inUse(Self.net) == 0)
        #expect(pool.shortage(of: dbAndNet).map(\.name) == ["semaphore db"])
        pool.release(dbOnly)
        #expect(pool.admit() == [2])
        #expect(pool.inUse(Self.run) == 1 && pool.inUse(Self.db) == 1 && pool.inUse(Self.net) == 1)
    }

    @Test func waitersWithTheSameDemandStartInArrivalOrder() {
        var pool = SlotPool(capacities: [1], names: ["max_parallel"])
        let one = SlotPool.Demand(amounts: [0: 1])
        for waiter in [5, 3, 9, 1, 7] { pool.enqueue(waiter, demand: one) }
        var order: [Int] = []
        for _ in 0..<5 {
            let admitted = pool.admit()
            #expect(admitted.count == 1)
            order += admitted
            pool.release(one)
        }
        #expect(order == [5, 3, 9, 1, 7])
    }

    @Test func waitersWithDifferentDemandsStartInArrivalOrder() throws {
        // One run slot: whatever else each needs, arrival decides.
        var pool = SlotPool(capacities: [1, 3, 3], names: ["max_parallel", "semaphore a", "semaphore b"])
        let demands = [
            SlotPool.Demand(amounts: [0: 1]), SlotPool.Demand(amounts: [0: 1, 1: 2]),
            SlotPool.Demand(amounts: [0: 1, 2: 1]), SlotPool.Demand(amounts: [0: 1, 1: 1, 2: 3]),
        ]
        var demandOf: [Int: SlotPool.Demand] = [:]
        for waiter in 0..<12 {
            demandOf[waiter] = demands[(waiter * 7) % demands.count]
            pool.enqueue(waiter, demand: demandOf[waiter]!)
        }
        var order: [Int] = []
        while order.count < 12 {
            let admitted = pool.admit()
            try #require(admitted.count == 1, "one run slot: exactly one starts at a time")
            order += admitted
            pool.release(demandOf[admitted[0]]!)
        }
        #expect(order == Array(0..<12))
    }

    /// A waiter that lacks a resource claims it: a later, smaller waiter may
    /// not overtake it on that resource (else a weight-2 user could starve
    /// behind a stream of weight-1 users), but may still use other resources.
    @Test func aBlockedWaiterKeepsItsPlaceAgainstSmallerLaterOnes() {
        var pool = Self.pool()
        let netOne = SlotPool.Demand(amounts: [Self.run: 1, Self.net: 1])
        let netTwo = SlotPool.Demand(amounts: [Self.run: 1, Self.net: 2])
        let dbOne = SlotPool.Demand(amounts: [Self.run: 1, Self.db: 1])
        pool.enqueue(1, demand: netOne)
        #expect(pool.admit() == [1])
        pool.enqueue(2, demand: netTwo)  // needs both net slots: one is taken
        pool.enqueue(3, demand: netOne)  // one net slot is free, but 2 came first
        pool.enqueue(4, demand: dbOne)  // touches nothing 2 waits for
        #expect(pool.admit() == [4])
        pool.release(netOne)
        #expect(pool.admit() == [2])
        pool.release(netTwo)
        #expect(pool.admit() == [3])
    }

    @Test func aRemovedWaiterNeverStarts() {
        var pool = SlotPool(capacities: [1], names: ["max_parallel"])
        let one = SlotPool.Demand(amounts: [0: 1])
        pool.enqueue(1, demand: one)
        pool.enqueue(2, demand: one)
        pool.enqueue(3, demand: one)
        #expect(pool.admit() == [1])
        pool.remove(2, demand: one)
        pool.release(one)
        #expect(pool.admit() == [3])
    }

    /// Many requesters over several resources with random weights, the
    /// resources in a random order in each demand and arriving at random
    /// times: whatever runs at any moment fits the capacities, something
    /// runs while anyone waits (no deadlock), and every requester is granted
    /// exactly once when all have released.
    @Test(arguments: 1...40)
    func randomRequestersAreAllGrantedOnceWithoutDeadlock(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)  // Tests/FlowrunTestSupport/RuntimeValuesSupport.swift
        let resourceCount = 2 + Int(random.next() % 5)
        let capacities = (0..<resourceCount).map { $0 == 0 ? 1 + Int(random.next() % 6) : 1 + Int(random.next() % 4) }
        var pool = SlotPool(capacities: capacities, names: (0..<resourceCount).map { "r\($0)" })
        let requesters = 30 + Int(random.next() % 120)
        var demands: [SlotPool.Demand] = []
        var amountsOf: [[Int: Int]] = []
        for _ in 0..<requesters {
            // Resource 0 always (a run slot), then a random subset in a random order.
            var amounts = [0: 1]
            for resource in (1..<resourceCount).shuffled(using: &random) where random.next() % 2 == 0 {
                amounts[resource] = 1 + Int(random.next() % UInt64(capacities[resource]))
            }
            amountsOf.append(amounts)
            demands.append(SlotPool.Demand(amounts: amounts))
        }
        var arrivals = Array(0..<requesters).shuffled(using: &random)[...]
        var running: [Int] = []
        var granted = [Int](repeating: 0, count: requesters)
        var waiting = 0
        while !arrivals.isEmpty || waiting > 0 || !running.isEmpty {
            // A few arrive, then the pool admits, then one running requester may finish.
            for _ in 0..<Int(random.next() % 4) {
                guard let next = arrivals.popFirst() else { break }
                pool.enqueue(next, demand: demands[next])
                waiting += 1
            }
            for admitted in pool.admit() {
                granted[admitted] += 1
                running.append(admitted)
                waiting -= 1
            }
            var held = [Int](repeating: 0, count: resourceCount)
            for requester in running { for (resource, amount) in amountsOf[requester] { held[resource] += amount } }
            for resource in 0..<resourceCount {
                try #require(held[resource] <= capacities[resource], "seed \(seed): r\(resource) over capacity")
                try #require(pool.inUse(resource) == held[resource], "seed \(seed): the pool's count of r\(resource) is off")
            }
            if waiting > 0 && running.isEmpty && arrivals.isEmpty {
                Issue.record("seed \(seed): deadlock: \(waiting) waiting, nothing running, nothing to arrive")
                return
            }
            if !running.isEmpty && (random.next() % 3 != 0 || arrivals.isEmpty) {
                let finished = running.remove(at: Int(random.next() % UInt64(running.count)))
                pool.release(demands[finished])
            }
        }
        #expect(granted.allSatisfy { $0 == 1 }, "seed \(seed): every requester granted exactly once")
        for resource in 0..<resourceCount { #expect(pool.inUse(resource) == 0) }
    }

    /// A slot given back twice would let one more task in than the limit:
    /// the pool stops flowrun instead.
    @Test func aSecondReleaseOfTheSameSlotsIsCaught() async {
        await #expect(processExitsWith: .failure) {
            var pool = SlotPool(capacities: [2, 1], names: ["max_parallel", "semaphore db"])
            let demand = SlotPool.Demand(amounts: [0: 1, 1: 1])
            pool.enqueue(1, demand: demand)
            _ = pool.admit()
            pool.release(demand)
            pool.release(demand)
        }
    }

    @Test func aSingleReleaseIsNotCaught() async {
        // The counterpart of the test above: the same steps with one release exit cleanly.
        await #expect(processExitsWith: .success) {
            var pool = SlotPool(capacities: [2, 1], names: ["max_parallel", "semaphore db"])
            let demand = SlotPool.Demand(amounts: [0: 1, 1: 1])
            pool.enqueue(1, demand: demand)
            _ = pool.admit()
            pool.release(demand)
        }
    }
}
