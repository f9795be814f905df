import Glibc
import Synchronization

/// Reads every running task's stdout and stderr, on the `EventLoop`'s
/// thread: the loop says which pipe is readable, the pump reads it and hands
/// each chunk to the task's `Reader`.
///
/// Why not a `DispatchSourceRead` per pipe: with many short-lived tasks,
/// libdispatch's Linux event loop crashed (`_dispatch_event_loop_drain`)
/// within a few dozen pipes reaching EOF. One thread that owns every read
/// descriptor from registration to `close` has no such lifecycle to get
/// wrong, and it is still one thread for all tasks, not one per task.
///
/// Why epoll rather than poll: the engine registers a new pipe with
/// `epoll_ctl` from its own thread, so starting a task costs no wake-up of
/// the loop (a write, a context switch and two reads per task with poll).
///
/// Why exits are reaped on the same thread (`ChildExitWatch`): a task is
/// over when its shell has exited and its stdout has closed, two events
/// that arrive together. Seen by one thread, both go to the engine in
/// one batch (`EventLoop.deliver`), which runs the engine's step on this
/// thread: the next task is spawned with no thread woken. A SIGCHLD source
/// of libdispatch's would cost its manager thread's wake-up plus a worker's
/// per exit, and the pipe's EOF another worker's.
final class OutputPump: @unchecked Sendable {
    // @unchecked: `readers` and `closing` are behind `state`'s mutex; the
    // buffer, `outputEnded` and `endedDescriptors` are touched only by the
    // loop's thread.
    struct Reader: Sendable {
        /// A chunk of output, on the loop's thread.
        var data: @Sendable (UnsafeRawBufferPointer) -> Void
        /// End of output (EOF, or `close` was asked for), on the loop's thread, once.
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

    /// The thread the pump reads on, and the engine's batches.
    let loop: EventLoop
    private let state = Mutex(State())
    /// Allocated at the first read (a run that starts no task touches none
    /// of it), freed with the pump. Not a `lazy var` array: each
    /// access to one went through its getter and setter, and the write
    /// into it copied all 64 KiB, twice per task (a third of a chain step).
    private var buffer: UnsafeMutableRawBufferPointer?
    /// Whether an output ended in the current wake-up (`ChildExitWatch`
    /// then looks for the exit that usually comes with it).
    private(set) var outputEnded = false
    /// Read ends whose output ended in this wake-up, closed once its work
    /// (which may spawn the next task) is done: a close is not on that path.
    private var endedDescriptors: [Int32] = []

    deinit { buffer?.deallocate() }

    init(loop: EventLoop) {
        self.loop = loop
        loop.setReadableHandler { [self] descriptor in readOnce(descriptor) }
        loop.onWake { [self] _ in
            for registration in state.withLock({ $0.closing }) { finish(registration.descriptor, only: registration.serial) }
        }
        loop.atWakeUpEnd { [self] in
            for descriptor in endedDescriptors { Glibc.close(descriptor) }
            endedDescriptors.removeAll(keepingCapacity: true)
            outputEnded = false
        }
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
        loop.watch(descriptor)
        return registration
    }

    /// Forgets registrations whose pipes never had a writer (the spawn
    /// failed) and closes their descriptors; close the write ends after.
    func discard(_ registrations: [Registration]) {
        state.withLock { state in
            for registration in registrations where state.readers[registration.descriptor]?.serial == registration.serial {
                state.readers[registration.descriptor] = nil
            }
        }
        for registration in registrations { Glibc.close(registration.descriptor) }
    }

    /// Stops reading early (something outside the task still holds the pipe
    /// open). Nothing happens if that registration has ended already, even
    /// if its descriptor number now belongs to another task's pipe.
    func close(_ registration: Registration) {
        state.withLock { _ = $0.closing.insert(registration) }
        loop.wake()
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
        let buffer = self.buffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        self.buffer = buffer
        let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
        if count > 0 { reader.data(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) }
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
}
