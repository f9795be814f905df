import CFlowrunSystem
import Dispatch
import Glibc
import Synchronization
import FlowrunEvents

/// Reads every running task's stdout on one thread, with `epoll`; with
/// `reapChildren`, that thread also reaps exited children, and with
/// `forwardSignals` it hears flowrun's signals.
///
/// Why not a `DispatchSourceRead` per pipe: with many short-lived tasks,
/// libdispatch's Linux event loop crashed (`_dispatch_event_loop_drain`)
/// within a few dozen pipes reaching EOF. One thread that owns every read
/// descriptor from registration to `close` has no such lifecycle to get
/// wrong, and it is still one thread for all tasks, not one per task.
///
/// Why epoll rather than poll: the engine registers a new pipe with
/// `epoll_ctl` from its own thread, so starting a task costs no wake-up of
/// the pump (a write, a context switch and two reads per task with poll).
///
/// Why exits are reaped here too: a task is over when its shell has exited
/// and its stdout has closed, two events that arrive together (or as one,
/// when the task holds its pipes' write ends: `endWithoutWriters`). Seen by
/// one thread, both go to the engine in one `engineQueue.sync` (`deliver`),
/// which runs the engine's step on this thread: the next task is spawned
/// with no thread woken. A SIGCHLD source of libdispatch's would cost its
/// manager thread's wake-up plus a worker's per exit, and the pipe's EOF
/// another worker's. Signals come here too, through the wake pipe (the
/// self-pipe trick): a libdispatch signal source keeps a signalfd in its
/// manager thread's epoll, and the kernel wakes every signalfd waiter for
/// any signal, so each child's SIGCHLD would wake that thread for nothing.
final class OutputPump: @unchecked Sendable {
    // @unchecked: `readers` and `closing` are behind `state`'s mutex; the
    // buffer, `pending`, `reaper`, `childExits` and `signalHandler` are
    // touched only by the pump thread (the last three are set before it reads
    // them, under `state`'s mutex).
    struct Reader: Sendable {
        /// A chunk of output, on the pump thread.
        var data: @Sendable (UnsafeRawBufferPointer) -> Void
        /// End of output (EOF, or `close` was asked for), on the pump thread, once.
        var end: @Sendable () -> Void
    }

    /// One `add`: its descriptor, and a serial that tells it from a later
    /// registration of the same descriptor number once this one has ended.
    struct Registration: Hashable, Sendable {
        var descriptor: Int32
        var serial: UInt64
    }

    private struct State {
        var readers: [Int32: (serial: UInt64, reader: Reader)] = [:]
        var closing: Set<Registration> = []
        var serial: UInt64 = 0
    }

    private let state = Mutex(State())
    /// The pump's thread, once it runs.
    private let threadIdentity = Mutex(pthread_t())
    private let epoll: Int32
    /// A byte here wakes the pump: 0 for a `close` request, else the number
    /// of a signal that was forwarded (`forwardSignals`) or is SIGCHLD.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// Where `deliver`ed work runs.
    private let engineQueue: DispatchQueue
    /// Work for `engineQueue`, run once the current wake-up is handled, and
    /// the buffer it is swapped with to run it (no array allocated per wake-up).
    private var pending: [() -> Void] = []
    private var running: [() -> Void] = []
    private var reaper: ChildReaper?
    /// Whether `engineQueue` is running a batch, and what runs at its end:
    /// touched only on `engineQueue`.
    private var inBatch = false
    private var batchEnd: [() -> Void] = []
    private var runningBatchEnd: [() -> Void] = []
    /// A signalfd for SIGCHLD, -1 until `reapChildren`.
    private var childExits: Int32 = -1
    private var signalHandler: ((Int32) -> Void)?
    /// Whether an output ended in the current wake-up.
    private var outputEnded = false
    /// Read ends whose output ended in this wake-up, closed once its work
    /// (which may spawn the next task) is done: a close is not on that path.
    private var endedDescriptors: [Int32] = []

    /// `engineQueue`: where `deliver`ed work runs (a serial queue).
    init(engineQueue: DispatchQueue) {
        self.engineQueue = engineQueue
        var ends: [Int32] = [-1, -1]
        _ = flowrun_pipe_cloexec(&ends)
        wakeRead = ends[0]
        wakeWrite = ends[1]
        _ = fcntl(wakeRead, F_SETFL, O_NONBLOCK)
        _ = fcntl(wakeWrite, F_SETFL, O_NONBLOCK)
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        Self.watch(wakeRead, in: epoll)
        startThread(named: "flowrun.output") { [self] in run() }
    }

    /// Starts reading `descriptor`; the pump closes it after `end`. It may
    /// stay blocking: the pump reads it only when epoll says it is readable,
    /// and no one else reads it.
    @discardableResult
    func add(_ descriptor: Int32, _ reader: Reader) -> Registration {
        let registration = state.withLock { state in
            state.serial += 1
            state.readers[descriptor] = (state.serial, reader)
            return Registration(descriptor: descriptor, serial: state.serial)
        }
        Self.watch(descriptor, in: epoll)
        return registration
    }

    /// Reaps `reaper`'s children on the pump thread, their completions for
    /// `engineQueue` delivered like `deliver`'s work. SIGCHLD must be blocked
    /// in the calling thread (the reaper's `init` does it) before the pump's
    /// thread started, so that thread inherits the block. Call it before the
    /// first child starts.
    func reapChildren(with reaper: ChildReaper) throws(ProcessError) {
        let descriptor = flowrun_child_exit_signalfd()
        guard descriptor >= 0 else { throw ProcessError(operation: "signalfd SIGCHLD", code: errno) }
        // A thread that does not block SIGCHLD takes the signal instead of the
        // signalfd: its handler wakes the pump through the wake pipe.
        guard flowrun_forward_signal(SIGCHLD, wakeWrite) == 0 else {
            Glibc.close(descriptor)
            throw ProcessError(operation: "sigaction SIGCHLD", code: errno)
        }
        state.withLock { _ in
            self.reaper = reaper
            childExits = descriptor
        }
        Self.watch(descriptor, in: epoll)
        // An exit before the signalfd existed: look once.
        wake()
    }

    /// From now on, `signals` (SIGINT, SIGTERM, …) no longer have their
    /// default effect: each one that arrives runs `handler` on `engineQueue`,
    /// like `deliver`'s work.
    func forwardSignals(_ signals: [Int32], to handler: @escaping (Int32) -> Void) throws(ProcessError) {
        state.withLock { _ in signalHandler = handler }
        for signalNumber in signals where flowrun_forward_signal(signalNumber, wakeWrite) != 0 {
            throw ProcessError(operation: "sigaction \(signalNumber)", code: errno)
        }
    }

    /// On the pump's thread only (a `Reader`'s callbacks): runs `work` on
    /// `engineQueue`, in one `sync` with the rest of this wake-up's work.
    func deliver(_ work: @escaping () -> Void) {
        pending.append(work)
    }

    /// On `engineQueue`: if that queue is running a batch of the pump's, runs
    /// `work` at the batch's end and returns true; else returns false. For
    /// work that gathers a step's effects (the event file's one write).
    func runAtBatchEnd(_ work: @escaping () -> Void) -> Bool {
        guard inBatch else { return false }
        batchEnd.append(work)
        return true
    }

    /// Whether the caller runs on the pump's thread (in a `deliver`ed batch,
    /// or in a `Reader` callback).
    var isCurrentThread: Bool { pthread_equal(pthread_self(), threadIdentity.withLock { $0 }) != 0 }

    /// On the pump's thread, in a batch: of `registrations`, those whose pipe
    /// has no writer left are read to their end and forgotten (closed at the
    /// end of this wake-up) without their `end` callback; they are returned,
    /// and the caller ends them itself. The others stay as they are.
    ///
    /// Why: a task that holds on to its pipes' write ends until its shell
    /// has exited hears of its end once (the exit), not twice (the pipes'
    /// end of file just before it, then the exit): the pump is not woken
    /// on the exiting shell's CPU while the shell is still exiting.
    func endWithoutWriters(_ registrations: [Registration]) -> [Registration] {
        var polls = registrations.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        guard poll(&polls, nfds_t(polls.count), 0) > 0 else { return [] }
        var ended: [Registration] = []
        for (registration, polled) in zip(registrations, polls) where polled.revents & Int16(POLLHUP) != 0 {
            guard let reader = state.withLock({ $0.readers[registration.descriptor] }), reader.serial == registration.serial else { continue }
            // No writer is left: every read returns what is there, then 0.
            var count: Int
            repeat {
                count = readChunk(registration.descriptor, to: reader.reader)
            } while count > 0 || (count < 0 && errno == EINTR)
            state.withLock { $0.readers[registration.descriptor] = nil }
            endedDescriptors.append(registration.descriptor)
            ended.append(registration)
        }
        return ended
    }

    /// Stops reading early (something outside the task still holds the pipe
    /// open). Nothing happens if that registration has ended already, even
    /// if its descriptor number now belongs to another task's pipe.
    func close(_ registration: Registration) {
        state.withLock { _ = $0.closing.insert(registration) }
        wake()
    }

    private func wake() {
        var byte: UInt8 = 0
        _ = write(wakeWrite, &byte, 1)
    }

    private static func watch(_ descriptor: Int32, in epoll: Int32) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = descriptor
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event)
    }

    private func run() {
        threadIdentity.withLock { $0 = pthread_self() }
        // No priority of its own: a thread of flowrun's that raised its nice
        // value or policy would pass it on to (or reset it in) the tasks it
        // spawns, and tasks run exactly as flowrun's caller set it (SPEC §2).
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let ready = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), -1) }
            if ready < 0 { continue }
            var reap = false
            outputEnded = false
            for event in events.prefix(Int(ready)) {
                if event.data.fd == wakeRead {
                    drainWake()
                    for registration in state.withLock({ $0.closing }) { finish(registration.descriptor, only: registration.serial) }
                    reap = true  // possibly SIGCHLD; a pass with nothing to reap is one waitpid
                } else if event.data.fd == childExits {
                    drainSignals()
                    reap = true
                } else {
                    readOnce(event.data.fd)
                }
            }
            // A shell's stdout closes as it exits, just before its SIGCHLD:
            // looking now often finds it reaped in the same wake-up.
            if reap || outputEnded, let reaper = state.withLock({ _ in reaper }) {
                reaper.reapPass(runningInline: engineQueue, into: &pending)
            }
            if !pending.isEmpty {
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
            for descriptor in endedDescriptors { Glibc.close(descriptor) }
            endedDescriptors.removeAll(keepingCapacity: true)
        }
    }

    /// One read per wake-up keeps every task's output moving (epoll is level-triggered here).
    private func readOnce(_ descriptor: Int32) {
        guard let reader = state.withLock({ $0.readers[descriptor]?.reader }) else { return }
        let count = readChunk(descriptor, to: reader)
        if count == 0 || (count < 0 && errno != EINTR && errno != EAGAIN) {
            finish(descriptor)
        }
    }

    /// One `read` into the buffer; what it got goes to `reader`. Returns read's result.
    private func readChunk(_ descriptor: Int32, to reader: Reader) -> Int {
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 { buffer.withUnsafeBytes { reader.data(UnsafeRawBufferPointer(rebasing: $0[0..<count])) } }
        return count
    }

    /// Ends the registration of `descriptor` (with `serial`, only that one).
    private func finish(_ descriptor: Int32, only serial: UInt64? = nil) {
        let reader = state.withLock { state -> Reader? in
            if let serial { state.closing.remove(Registration(descriptor: descriptor, serial: serial)) }
            guard let registered = state.readers[descriptor], serial == nil || registered.serial == serial else { return nil }
            state.readers[descriptor] = nil
            return registered.reader
        }
        guard let reader else { return }
        // Closing (at the end of this wake-up) leaves the epoll set too:
        // flowrun holds the only reference to a read end (children get write
        // ends; any copy a spawn made is closed before clone returns).
        endedDescriptors.append(descriptor)
        outputEnded = true
        reader.end()
    }

    /// Reads the SIGCHLDs the signalfd holds (only the wake-up matters: the
    /// reap pass asks the kernel who exited). A read that did not fill the
    /// buffer has emptied it.
    private func drainSignals() {
        var infos = (signalfd_siginfo(), signalfd_siginfo(), signalfd_siginfo(), signalfd_siginfo())
        let size = MemoryLayout.size(ofValue: infos)
        while withUnsafeMutableBytes(of: &infos, { Glibc.read(childExits, $0.baseAddress, size) }) == size {}
    }

    /// Empties the wake pipe; forwarded signals go to the handler in arrival order.
    private func drainWake() {
        var scratch = [UInt8](repeating: 0, count: 256)
        while true {
            let count = scratch.withUnsafeMutableBytes { Glibc.read(wakeRead, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            for byte in scratch[..<count] where byte != 0 && Int32(byte) != SIGCHLD {
                guard let handler = state.withLock({ _ in signalHandler }) else { continue }
                deliver { handler(Int32(byte)) }
            }
        }
    }
}
