import Dispatch
import FlowrunModel
import FlowrunEvents

/// When each task runs: the run's nodes and the rules over them, as pure
/// state (ninja's `Plan`). It starts no process, holds no descriptor,
/// reports no event and reads no clock but the one it is given; it answers
/// with decisions (`Readiness`, a join's verdict, the next admitted task,
/// a retry's delay) that `RunEngine` acts on — starting attempts through
/// an executor, arming timers, emitting events (ninja's `Builder`).
///
/// Owned by one engine and confined to its serial queue: a value, not
/// `Sendable`, stored in the engine; the entries that change scheduling
/// state check the queue (`dispatchPrecondition`), so a call from any
/// other thread traps instead of racing (SchedulerTests).
struct Scheduler {
    /// Tasks, groups and joins by index, with their statuses and counters.
    var nodes = RunNodes()
    /// The run's slots, group limits, semaphores, CPUs and memory.
    var pool: SlotPool
    /// Pool resources by semaphore name: declared ones from the start, a
    /// family's added as tasks first name them (`semaphoreResource(named:)`).
    var resourceOfSemaphore: [String: Int]
    let semaphoreTable: SemaphoreTable
    /// When each deadline falls due, on `clock`.
    var deadlines = Deadlines()
    let clock: any SchedulerClock
    /// The run's own deadline (`timeout:` at the top), for retries' delays.
    let runTimeout: Duration?
    /// The queue every state change happens on.
    private let queue: DispatchQueue

    /// Main-phase nodes not yet final; when it reaches 0 `finally` starts.
    var unsettledMain = 0
    var unsettledFinally = 0
    var finallyStarted = false
    /// Set once the run is being stopped: nothing new starts in the main phase.
    var stopping: CancelReason?
    /// A second signal: everything is cancelled at once, `finally` included.
    var killingEverything = false

    init(pool: SlotPool, semaphores: [String: Int] = [:], semaphoreTable: SemaphoreTable = SemaphoreTable([]),
         clock: any SchedulerClock, runTimeout: Duration?, queue: DispatchQueue) {
        self.pool = pool
        resourceOfSemaphore = semaphores
        self.semaphoreTable = semaphoreTable
        self.clock = clock
        self.runTimeout = runTimeout
        self.queue = queue
    }

    /// Traps unless called on the owning queue.
    @inline(__always)
    func checkQueue() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    // MARK: - Phases

    /// The main phase has settled and `finally` has not begun.
    var finallyIsDue: Bool { unsettledMain == 0 && !finallyStarted }

    /// Both phases have settled.
    var allSettled: Bool { unsettledMain == 0 && finallyStarted && unsettledFinally == 0 }

    /// The main-phase nodes that need nothing (joins wait for their members).
    func roots() -> [Int] {
        nodes.indices.filter { !nodes[$0].isFinally && nodes[$0].unsettledNeeds == 0 && nodes[$0].kind != .join }
    }

    /// Begins `finally`: its nodes that need nothing, to be made ready.
    mutating func beginFinally() -> [Int] {
        checkQueue()
        finallyStarted = true
        deadlines.disarm(.run)
        return nodes.indices.filter { nodes[$0].isFinally && nodes[$0].unsettledNeeds == 0 }
    }

    /// Starts stopping the main phase for `reason`; false when it is
    /// stopping already or `finally` has begun (nothing more to stop).
    mutating func beginStopping(_ reason: CancelReason) -> Bool {
        checkQueue()
        guard stopping == nil, !finallyStarted else { return false }
        stopping = reason
        return true
    }

    /// Whether a task that ended `status` stops the run (`fail_fast`): it
    /// failed or timed out, was not allowed to, and is not in `finally`.
    func triggersFailFast(_ index: Int, _ status: TaskStatus, failFast: Bool) -> Bool {
        failFast && (status == .failed || status == .timedOut) && !nodes[index].isFinally
            && !(nodes[index].definition?.value.continueOnError ?? false)
    }

    /// Whether the node's failure fails the run (exit 1).
    func countsAsFailure(_ index: Int) -> Bool {
        // Fields read one by one: a node read whole is a copy (some 20 references retained).
        guard nodes[index].status.isFailure else { return false }
        return nodes[index].kind != .task || !(nodes[index].definition?.value.continueOnError ?? false)
    }
}

// Confined to its engine's queue: never handed to another thread.
@available(*, unavailable)
extension Scheduler: Sendable {}
