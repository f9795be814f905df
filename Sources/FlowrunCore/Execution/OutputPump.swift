import CFlowrunSystem
import Foundation
import Synchronization

/// Reads every running task's stdout on one thread, with `epoll`.
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
final class OutputPump: @unchecked Sendable {
    // @unchecked: `readers` and `closing` are behind `state`'s mutex; the
    // buffer is touched only by the pump thread.
    struct Reader: Sendable {
        /// A chunk of output, on the pump thread.
        var data: @Sendable (UnsafeRawBufferPointer) -> Void
        /// End of output (EOF, or `close` was asked for), on the pump thread, once.
        var end: @Sendable () -> Void
    }

    private struct State {
        var readers: [Int32: Reader] = [:]
        var closing: Set<Int32> = []
    }

    private let state = Mutex(State())
    private let epoll: Int32
    /// Writing a byte here wakes the pump to act on a `close` request.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    init() {
        var ends: [Int32] = [-1, -1]
        _ = flowrun_pipe_cloexec(&ends)
        wakeRead = ends[0]
        wakeWrite = ends[1]
        _ = fcntl(wakeRead, F_SETFL, O_NONBLOCK)
        _ = fcntl(wakeWrite, F_SETFL, O_NONBLOCK)
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        Self.watch(wakeRead, in: epoll)
        let thread = Thread { [self] in run() }
        thread.name = "flowrun.output"
        thread.start()
    }

    /// Starts reading `descriptor`; the pump closes it after `end`.
    func add(_ descriptor: Int32, _ reader: Reader) {
        _ = fcntl(descriptor, F_SETFL, O_NONBLOCK)
        state.withLock { $0.readers[descriptor] = reader }
        Self.watch(descriptor, in: epoll)
    }

    /// Stops reading `descriptor` early (something outside the task still holds it open).
    func close(_ descriptor: Int32) {
        state.withLock { _ = $0.closing.insert(descriptor) }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private static func watch(_ descriptor: Int32, in epoll: Int32) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = descriptor
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event)
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let ready = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), -1) }
            if ready < 0 { continue }
            for event in events.prefix(Int(ready)) {
                if event.data.fd == wakeRead {
                    drainWake()
                    for descriptor in state.withLock({ $0.closing }) { finish(descriptor) }
                } else {
                    readOnce(event.data.fd)
                }
            }
        }
    }

    /// One read per wake-up keeps every task's output moving (epoll is level-triggered here).
    private func readOnce(_ descriptor: Int32) {
        guard let reader = state.withLock({ $0.readers[descriptor] }) else { return }
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            buffer.withUnsafeBytes { reader.data(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
            finish(descriptor)
        }
    }

    private func finish(_ descriptor: Int32) {
        let reader = state.withLock { state -> Reader? in
            state.closing.remove(descriptor)
            return state.readers.removeValue(forKey: descriptor)
        }
        guard let reader else { return }
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, descriptor, nil)
        Glibc.close(descriptor)
        reader.end()
    }

    private func drainWake() {
        var scratch = [UInt8](repeating: 0, count: 256)
        while scratch.withUnsafeMutableBytes({ Glibc.read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
    }
}
