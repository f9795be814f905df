import CFlowrunSystem
import Foundation
import Synchronization

/// Reads every running task's stdout on one thread, with `poll`.
///
/// Why not a `DispatchSourceRead` per pipe: with many short-lived tasks,
/// libdispatch's Linux event loop crashed (`_dispatch_event_loop_drain`)
/// within a few dozen pipes reaching EOF. One thread that owns every read
/// descriptor from registration to `close` has no such lifecycle to get
/// wrong, and it is still one thread for all tasks, not one per task.
final class OutputPump: @unchecked Sendable {
    // @unchecked: `readers` and `wake` are behind `state`'s mutex; the
    // buffer and the poll set are touched only by the pump thread.
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
    /// Writing a byte here wakes the pump so it sees new readers and close requests.
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
        let thread = Thread { [self] in run() }
        thread.name = "flowrun.output"
        thread.start()
    }

    /// Starts reading `descriptor`; the pump closes it after `end`.
    func add(_ descriptor: Int32, _ reader: Reader) {
        _ = fcntl(descriptor, F_SETFL, O_NONBLOCK)
        state.withLock { $0.readers[descriptor] = reader }
        wake()
    }

    /// Stops reading `descriptor` early (something outside the task still holds it open).
    func close(_ descriptor: Int32) {
        state.withLock { _ = $0.closing.insert(descriptor) }
        wake()
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func run() {
        while true {
            let (descriptors, closing) = state.withLock { state in
                (Array(state.readers.keys), state.closing)
            }
            for descriptor in closing { finish(descriptor) }
            var polled = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            polled += descriptors.filter { !closing.contains($0) }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&polled, nfds_t(polled.count), -1)
            if ready < 0 { continue }
            if polled[0].revents != 0 { drainWake() }
            for entry in polled.dropFirst() where entry.revents != 0 {
                readOnce(entry.fd)
            }
        }
    }

    /// One read per wake-up keeps every task's output moving (poll is level-triggered).
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
        Glibc.close(descriptor)
        reader.end()
    }

    private func drainWake() {
        var scratch = [UInt8](repeating: 0, count: 256)
        while scratch.withUnsafeMutableBytes({ Glibc.read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
    }
}
