import CFlowrunSystem
import Dispatch
import Glibc
import Synchronization
import FlowrunEvents

/// One thread that only waits and dispatches: `epoll_wait` over the
/// descriptors it was given, each ready one handed to its handler, bytes
/// written to its wake pipe handed to the wake handlers, then the wake-up's
/// engine work run in one `engineQueue.sync` batch. It reads no pipe, reaps
/// no child and knows no signal: `OutputPump` (tasks' output),
/// `ChildExitWatch` (reaping) and `SignalForwarding` (flowrun's signals)
/// register with it and do that on its thread.
///
/// Why one thread of its own, and epoll rather than Dispatch sources or
/// poll: see `OutputPump`. Why the batch: a task's end (its pipes' end of
/// file and its exit, seen in one wake-up) and the next task's spawn run on
/// this thread in one `sync`, with no other thread woken.
final class EventLoop: @unchecked Sendable {
    // @unchecked: `registry` is behind `registryLock`; `pending`, `running`,
    // `wakeBytes` and `wakeScratch` are touched only by the loop's thread; `inBatch`,
    // `batchEnd` and `runningBatchEnd` only on `engineQueue`.

    /// Who handles what, read once per wake-up.
    private struct Registry {
        /// The few descriptors with a handler of their own (a signalfd).
        var sources: [Int32: () -> Void] = [:]
        /// Every other ready descriptor (the tasks' pipes).
        var readable: ((Int32) -> Void)?
        /// Called once per wake-pipe wake-up with the bytes it held.
        var wakeHandlers: [(ArraySlice<UInt8>) -> Void] = []
        /// After the wake-up's descriptors were handled, before its batch.
        var afterEvents: [() -> Void] = []
        /// After the batch: the wake-up's last step.
        var wakeUpEnd: [() -> Void] = []
    }

    /// Behind `registryLock` (handlers are not Sendable: they run on the loop's thread only).
    private var registry = Registry()
    private let registryLock = Mutex(())
    private let epoll: Int32
    private let wakeRead: Int32
    /// A byte written here wakes the loop (a signal handler may write it: see `SignalForwarding`).
    let wakeDescriptor: Int32
    /// Where `deliver`ed work runs (a serial queue).
    let engineQueue: DispatchQueue
    /// Work for `engineQueue`, run once the current wake-up is handled, and
    /// the buffer it is swapped with to run it (no array allocated per wake-up).
    private var pending: [() -> Void] = []
    private var running: [() -> Void] = []
    private var wakeBytes: [UInt8] = []
    private var wakeScratch = [UInt8](repeating: 0, count: 256)
    /// Whether `engineQueue` is running a batch of the loop's, and what runs
    /// at its end: touched only on `engineQueue`.
    private var inBatch = false
    private var batchEnd: [() -> Void] = []
    private var runningBatchEnd: [() -> Void] = []
    /// The loop's thread once it runs (0 before): what `preconditionOnLoopThread` checks against.
    private let loopThread = Atomic<UInt>(0)

    /// Starts the loop's thread: it inherits the calling thread's signal
    /// mask (SIGCHLD must be blocked before, see `RunEngine.init`). Without
    /// `startsThread`, the loop runs on the thread that calls `runHere`.
    init(engineQueue: DispatchQueue, threadName: String = "flowrun.output", startsThread: Bool = true) {
        self.engineQueue = engineQueue
        var ends: [Int32] = [-1, -1]
        _ = flowrun_pipe_cloexec(&ends)
        wakeRead = ends[0]
        wakeDescriptor = ends[1]
        _ = fcntl(wakeRead, F_SETFL, O_NONBLOCK)
        _ = fcntl(wakeDescriptor, F_SETFL, O_NONBLOCK)
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        Self.watch(wakeRead, in: epoll)
        if startsThread { startThread(named: threadName) { [self] in run() } }
    }

    /// Runs the loop on the calling thread, `first` as its first batch,
    /// until `finished` says so after a wake-up: a run that starts no
    /// process (every task up to date) makes no thread for a loop that
    /// would only carry its signals. A signal that comes during the last
    /// batch is not taken: the run has ended, as when it comes after.
    func runHere(first: @escaping () -> Void, until finished: () -> Bool) {
        pending.append(first)
        run(until: finished)
    }

    // MARK: Registration (any thread)

    /// Waits for `descriptor` too; when it is readable, the `readable` handler gets it.
    func watch(_ descriptor: Int32) {
        Self.watch(descriptor, in: epoll)
    }

    /// Waits for `descriptor` too; when it is readable, `handler` runs on the loop's thread.
    func watch(_ descriptor: Int32, handler: @escaping () -> Void) {
        registryLock.withLock { _ in registry.sources[descriptor] = handler }
        Self.watch(descriptor, in: epoll)
    }

    /// What handles a ready descriptor that has no handler of its own.
    func setReadableHandler(_ handler: @escaping (Int32) -> Void) {
        registryLock.withLock { _ in registry.readable = handler }
    }

    func onWake(_ handler: @escaping (ArraySlice<UInt8>) -> Void) {
        registryLock.withLock { _ in registry.wakeHandlers.append(handler) }
    }

    func afterEvents(_ handler: @escaping () -> Void) {
        registryLock.withLock { _ in registry.afterEvents.append(handler) }
    }

    func atWakeUpEnd(_ handler: @escaping () -> Void) {
        registryLock.withLock { _ in registry.wakeUpEnd.append(handler) }
    }

    /// Wakes the loop with `byte` (0: nothing but the wake-up itself).
    func wake(_ byte: UInt8 = 0) {
        var byte = byte
        _ = write(wakeDescriptor, &byte, 1)
    }

    // MARK: The engine's batch

    /// On the loop's thread only: runs `work` on `engineQueue`, in one `sync`
    /// with the rest of this wake-up's work.
    func deliver(_ work: @escaping () -> Void) {
        pending.append(work)
    }

    /// On the loop's thread only: adds to this wake-up's work in place.
    func deliver(with add: (inout [() -> Void]) -> Void) {
        add(&pending)
    }

    /// On `engineQueue`: if that queue is running a batch of the loop's, runs
    /// `work` at the batch's end and returns true; else returns false. For
    /// work that gathers a step's effects (the event file's one write).
    func runAtBatchEnd(_ work: @escaping () -> Void) -> Bool {
        guard inBatch else { return false }
        batchEnd.append(work)
        return true
    }


    // MARK: The loop

    private static func watch(_ descriptor: Int32, in epoll: Int32) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = descriptor
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event)
    }

    /// Traps unless called on the loop's thread: the entry of state that only
    /// that thread may touch (the handlers' own, a pump reader's).
    func preconditionOnLoopThread(file: StaticString = #fileID, line: UInt = #line) {
        precondition(pthread_equal(pthread_self(), pthread_t(loopThread.load(ordering: .acquiring))) != 0,
                     "called off the event loop's thread", file: file, line: line)
    }

    private func run(until finished: () -> Bool = { false }) {
        loopThread.store(UInt(pthread_self()), ordering: .releasing)
        // No priority of its own: a thread of flowrun's that raised its nice
        // value or policy would pass it on to (or reset it in) the tasks it
        // spawns, and tasks run exactly as flowrun's caller set it (SPEC §2).
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while !finished() {
            // Work delivered before the loop ran (`runHere`'s first) does not wait for a descriptor.
            let timeout: Int32 = pending.isEmpty ? -1 : 0
            let ready = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), timeout) }
            if ready < 0 { continue }
            let handlers = registryLock.withLock { _ in registry }
            for event in events.prefix(Int(ready)) {
                let descriptor = event.data.fd
                if descriptor == wakeRead {
                    drainWake()
                    for handler in handlers.wakeHandlers { handler(wakeBytes[...]) }
                } else if let source = handlers.sources[descriptor] {
                    source()
                } else {
                    handlers.readable?(descriptor)
                }
            }
            for handler in handlers.afterEvents { handler() }
            if !pending.isEmpty { runBatch() }
            for handler in handlers.wakeUpEnd { handler() }
        }
    }

    private func runBatch() {
        swap(&pending, &running)
        engineQueue.sync {
            inBatch = true
            for item in running { item() }
            while !batchEnd.isEmpty {
                swap(&batchEnd, &runningBatchEnd)
                for item in runningBatchEnd { item() }
                runningBatchEnd.removeAll(keepingCapacity: true)
            }
            inBatch = false
        }
        running.removeAll(keepingCapacity: true)
    }

    /// Empties the wake pipe into `wakeBytes`.
    private func drainWake() {
        wakeBytes.removeAll(keepingCapacity: true)
        while true {
            let count = wakeScratch.withUnsafeMutableBytes { Glibc.read(wakeRead, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            wakeBytes += wakeScratch[..<count]
        }
    }
}
