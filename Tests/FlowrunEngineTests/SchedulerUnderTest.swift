@testable import FlowrunModel
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import FlowrunTestSupport
import Dispatch
import Foundation
import Testing

/// A clock the test moves by hand.
final class FakeSchedulerClock: SchedulerClock {
    var now: Double = 1_000
}

/// A `Scheduler` built from a workflow as the engine builds it, then driven
/// by hand with no engine, no process and no timer: a fake executor (the
/// set `running`), a fake clock (`advance`), and a small driver that does
/// what `RunEngine` does with each decision (ninja's `Builder` over its
/// `Plan`). Every step runs on `queue`, the scheduler's owner.
final class SchedulerUnderTest {
    let queue = DispatchQueue(label: "scheduler-under-test")
    let clock = FakeSchedulerClock()
    private(set) var scheduler: Scheduler
    private let indexByName: [String: Int]
    private let failFast: Bool
    /// The fake executor: attempts started and not ended, by node index.
    private(set) var running: Set<Int> = []
    /// Every attempt started, as `task#attempt`, in order.
    private(set) var starts: [String] = []
    /// Why each node settled as it did.
    private(set) var reasons: [String: String] = [:]

    init(_ yaml: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        let plan = try Planner.plan(try workflow(yaml, sourceLocation: sourceLocation))
        let directory = NSTemporaryDirectory() + "flowrun-scheduler-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The engine builds the nodes and the pool from the plan; it never runs.
        let engine = RunEngine(plan: plan, record: try RunRecord(baseDirectory: directory), reporters: [],
                               attemptFactory: { _, _, _ in preconditionFailure("the engine under a scheduler test starts nothing") })
        let built = engine.scheduler
        scheduler = Scheduler(pool: built.pool, semaphores: built.resourceOfSemaphore, semaphoreTable: built.semaphoreTable,
                              clock: clock, runTimeout: plan.runTimeout, queue: queue)
        scheduler.nodes = built.nodes
        scheduler.unsettledMain = built.unsettledMain
        scheduler.unsettledFinally = built.unsettledFinally
        indexByName = engine.indexByName
        failFast = plan.workflow.failFast
    }

    // MARK: - What a test asks

    func start() {
        queue.sync {
            for root in scheduler.roots() { ready(root) }
            for join in scheduler.emptyJoins() { complete(join, .init(status: .succeeded, why: "nothing to wait for")) }
            finishIfDue()
        }
    }

    /// The fake executor reports the end of `name`'s running attempt.
    func end(_ name: String, _ status: TaskStatus = .succeeded, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        queue.sync {
            let index = self.index(name)
            guard running.contains(index) else {
                Issue.record("\(name) is not running (running: \(runningNames.sorted()))", sourceLocation: sourceLocation)
                return
            }
            attemptEnded(index, status, why: status == .succeeded ? nil : "fake \(status.rawValue)")
        }
    }

    /// Moves the clock `seconds` on and fires the deadlines due by then, earliest first.
    func advance(_ seconds: Double) {
        queue.sync {
            clock.now += seconds
            while let key = scheduler.deadlines.expired(at: clock.now).first {
                scheduler.deadlines.disarm(key)
                fire(key)
            }
        }
    }

    var runningNames: Set<String> { Set(running.map { name($0) }) }

    func status(_ name: String) -> TaskStatus { queue.sync { scheduler.nodes[index(name)].status } }
    func cancelReason(_ name: String) -> CancelReason? { queue.sync { scheduler.nodes[index(name)].cancelReason } }
    func reason(_ name: String) -> String? { queue.sync { reasons[name] } }
    func due(_ key: Deadlines.Key) -> Double? { queue.sync { scheduler.deadlines.due[key] } }
    func index(_ name: String) -> Int { indexByName[name]! }
    var allSettled: Bool { queue.sync { scheduler.allSettled } }
    var stopping: CancelReason? { queue.sync { scheduler.stopping } }
    func inUse(_ resource: Int) -> Int { queue.sync { scheduler.pool.inUse(resource) } }

    func withScheduler<T>(_ body: (inout Scheduler) -> T) -> T { queue.sync { body(&scheduler) } }

    // MARK: - The driver: what the engine does with each decision

    private func name(_ index: Int) -> String { scheduler.nodes[index].name }

    private func ready(_ index: Int) {
        let when = scheduler.nodes[index].definition?.value.when ?? .success
        switch scheduler.readiness(of: index, when: when) {
        case .settled, .waitsForMembers:
            return
        case .cancel(let reason):
            settle(index, .cancelled, why: reason.rawValue, reason: reason)
        case .outOfOrder(let previous):
            skip(index, why: "\(name(previous)) did not succeed")
        case .skip(let why):
            skip(index, why: why)
        case .run:
            if scheduler.nodes[index].kind == .group {
                activate(index)
            } else if scheduler.enqueue(index) {
                admit()
            }
        }
    }

    private func skip(_ index: Int, why: String) {
        if scheduler.nodes[index].kind == .group {
            for member in scheduler.nodes[index].members { settle(member, .skipped, why: "group \(name(index)) was skipped") }
        }
        settle(index, .skipped, why: why)
    }

    private func activate(_ group: Int) {
        scheduler.nodes[group].status = .running
        scheduler.nodes[group].startedAt = clock.now
        let members = scheduler.nodes[group].members
        scheduler.nodes[group].unsettledMembers = members.count
        if let timeout = scheduler.nodes[group].timeout { scheduler.deadlines.arm(.group(group), after: timeout, now: clock.now) }
        if members.isEmpty { return settle(group, .succeeded, why: "no members") }
        for member in members where scheduler.needSettled(member) { ready(member) }
    }

    private func admit() {
        while let index = scheduler.admitNext() {
            for join in scheduler.markStarted(index, at: clock.now) {
                if let timeout = scheduler.nodes[join].timeout { scheduler.deadlines.arm(.join(join), after: timeout, now: clock.now) }
            }
            if let timeout = scheduler.nodes[index].timeout { scheduler.deadlines.arm(.timeout(index), after: timeout, now: clock.now) }
            running.insert(index)
            starts.append("\(name(index))#\(scheduler.nodes[index].attempt)")
        }
    }

    private func attemptEnded(_ index: Int, _ status: TaskStatus, why: String?) {
        running.remove(index)
        scheduler.deadlines.disarm(.timeout(index))
        scheduler.releaseSlots(index)
        defer { admit() }
        let number = scheduler.nodes[index].attempt
        if scheduler.retries(index, after: number, endedAs: status) {
            let delay = scheduler.retryDelay(for: index, after: number, runStartedAt: 1_000)
            scheduler.backOff(index)
            scheduler.deadlines.arm(.retry(index), after: delay, now: clock.now)
            return
        }
        settle(index, status, why: why)
    }

    private func settle(_ index: Int, _ status: TaskStatus, why: String?, reason: CancelReason? = nil) {
        guard !scheduler.nodes[index].status.isFinal else { return }
        if let reason { scheduler.nodes[index].cancelReason = reason }
        guard scheduler.markSettled(index, status, at: clock.now) else { return }
        reasons[name(index)] = why
        if scheduler.nodes[index].kind == .task, scheduler.triggersFailFast(index, status, failFast: failFast) { stop(.failFast) }
        if let group = scheduler.nodes[index].group, scheduler.nodes[group].status == .running, scheduler.staticMemberSettled(group) {
            scheduler.deadlines.disarm(.group(group))
            let outcome = scheduler.staticGroupOutcome(group, sequential: false)
            settle(group, outcome.status, why: outcome.why, reason: outcome.reason)
        }
        for join in scheduler.nodes[index].joins {
            if let verdict = scheduler.joinMemberSettled(join) { complete(join, verdict) }
        }
        for dependent in scheduler.nodes[index].dependents where scheduler.needSettled(dependent) { ready(dependent) }
        finishIfDue()
    }

    private func complete(_ join: Int, _ verdict: Scheduler.JoinVerdict) {
        scheduler.deadlines.disarm(.join(join))
        let losers = scheduler.losers(of: join, completingAs: verdict.status, failFast: failFast)
        settle(join, verdict.status, why: verdict.why)
        for member in losers { cancel(member, .joinSettled) }
    }

    private func cancel(_ index: Int, _ reason: CancelReason) {
        guard !scheduler.nodes[index].status.isFinal else { return }
        switch scheduler.nodes[index].kind {
        case .task:
            // The fake executor stops at once.
            if running.contains(index) {
                scheduler.nodes[index].cancelReason = reason
                attemptEnded(index, .cancelled, why: reason.rawValue)
            } else {
                settle(index, .cancelled, why: reason.rawValue, reason: reason)
            }
        case .group:
            if scheduler.nodes[index].status == .pending { settle(index, .cancelled, why: reason.rawValue, reason: reason) }
            for member in scheduler.nodes[index].members { cancel(member, reason) }
        case .join:
            for member in scheduler.nodes[index].members { cancel(member, reason) }
        }
    }

    private func stop(_ reason: CancelReason) {
        guard scheduler.beginStopping(reason) else { return }
        for index in scheduler.nodes.indices where !scheduler.nodes[index].isFinally && scheduler.nodes[index].kind != .join {
            cancel(index, reason)
        }
        finishIfDue()
    }

    private func finishIfDue() {
        guard scheduler.finallyIsDue else { return }
        for index in scheduler.beginFinally() { ready(index) }
    }

    private func fire(_ key: Deadlines.Key) {
        switch key {
        case .run:
            stop(.runTimeout)
        case .timeout(let index):
            if running.contains(index) { attemptEnded(index, .timedOut, why: "timed out") }
        case .retry(let index):
            if scheduler.backOffEnded(index), scheduler.enqueue(index) { admit() }
        case .group(let group):
            guard scheduler.groupDeadlinePassed(group) else { return }
            for member in scheduler.nodes[group].members { cancel(member, .groupTimeout) }
        case .join(let join):
            if let verdict = scheduler.joinDeadlinePassed(join) { complete(join, verdict) }
        }
    }

    /// Arms the run's deadline as the engine does when the run begins.
    func armRunDeadline(_ timeout: Duration) {
        queue.sync { _ = scheduler.deadlines.arm(.run, after: timeout, now: clock.now) }
    }
}
