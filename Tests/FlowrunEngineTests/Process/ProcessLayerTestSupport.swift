@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import FlowrunTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

/// Spawns `request` and calls `completion` on `queue` once the child has
/// exited, waiting for that one pid on a thread of its own: other suites in
/// this process (end-to-end tests) wait for their own children, so nothing
/// here may reap with `waitpid(-1)` as `ChildReaper` does (its tests run in
/// exit tests' own processes).
func launchAndWait(_ request: LaunchRequest, on queue: DispatchQueue, completion: @escaping @Sendable (ProcessExit) -> Void) throws(ProcessError) -> Int32 {
    let pid = try ProcessLauncher.spawn(request)
    Thread.detachNewThread {
        var status: Int32 = 0
        var result: Int32
        repeat { result = waitpid(pid, &status, 0) } while result < 0 && errno == EINTR
        let exit = ProcessExit(waitStatus: status)
        queue.async { completion(exit) }
    }
    return pid
}

/// A PATH for test children.
let testPath = "PATH=/usr/local/bin:/usr/bin:/bin"

/// A marker no other test (or run) shares.
func uniqueMarker(serial: Int = 1) -> ProcessTreeMarker {
    ProcessTreeMarker(runID: "test-\(UUID().uuidString.prefix(13))", serial: serial)
}

/// A value that arrives once, from any thread, and can be awaited with a deadline.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var deliveries = 0
        var waiters: [Int: CheckedContinuation<Value?, Never>] = [:]
        var nextWaiter = 0
    }
    /// Owned by its mutex.
    private let state = Mutex(State())

    func fulfil(_ value: Value) {
        let waiters = state.withLock { state in
            state.deliveries += 1
            if state.value == nil { state.value = value }
            defer { state.waiters.removeAll() }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// How many times `fulfil` was called.
    var deliveries: Int { state.withLock { $0.deliveries } }

    /// The value, or nil if none came within `timeout`.
    func value(within timeout: Duration = .seconds(20)) async -> Value? {
        await withCheckedContinuation { continuation in
            let waiter: Int? = state.withLock { state in
                if state.value != nil { return nil }
                defer { state.nextWaiter += 1 }
                state.waiters[state.nextWaiter] = continuation
                return state.nextWaiter
            }
            guard let waiter else {
                continuation.resume(returning: state.withLock { $0.value })
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(timeout.components.seconds * 1000))) {
                self.state.withLock { $0.waiters.removeValue(forKey: waiter) }?.resume(returning: nil)
            }
        }
    }
}

/// A pipe whose ends are both close-on-exec; closes what is left in `deinit`.
final class TestPipe: Sendable {
    let readEnd: Int32
    /// Owned by its mutex: closed once, by whoever comes first.
    private let writeEnd: Mutex<Int32>

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ProcessError(operation: "pipe", code: errno) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        readEnd = fds[0]
        writeEnd = Mutex(fds[1])
    }

    var writeDescriptor: Int32 { writeEnd.withLock { $0 } }

    /// Closes our copy of the write end, so EOF comes once the children close theirs.
    func closeWriteEnd() {
        writeEnd.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    deinit {
        closeWriteEnd()
        close(readEnd)
    }

    /// Reads lines (on a Dispatch thread, blocking in poll) until `done`
    /// accepts them, EOF, or `timeout`; returns what was read.
    func lines(
        timeout: Duration = .seconds(20), until done: @escaping @Sendable ([String]) -> Bool = { _ in false }
    ) async -> [String] {
        let fd = readEnd
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let deadline = ContinuousClock.now + timeout
                var bytes: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 4096)
                func split() -> [String] {
                    String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
                }
                while !done(split()) {
                    let left = deadline - ContinuousClock.now
                    guard left > .zero else { break }
                    var item = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&item, 1, Int32(left.components.seconds * 1000 + 1))
                    if ready < 0 && errno == EINTR { continue }
                    guard ready > 0 else { break }
                    let count = read(fd, &chunk, chunk.count)
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { break }
                    bytes += chunk[..<count]
                }
                continuation.resume(returning: split())
            }
        }
    }
}

/// A child started through `launchAndWait`.
struct TestChild {
    let pid: Int32
    /// Fulfilled by the reaper.
    let exit: OneShot<ProcessExit>
    /// The child's stdout and stderr.
    let output: TestPipe
    let tree: ProcessTree
}

/// Launches `sh -c script` with stdout and stderr into a fresh pipe, the
/// marker's entry in the environment, from a Dispatch worker thread.
func launch(
    _ script: String, marker: ProcessTreeMarker = uniqueMarker(), environment: [String] = [testPath],
    directory: String? = nil
) throws -> TestChild {
    let output = try TestPipe()
    let exit = OneShot<ProcessExit>()
    let request = LaunchRequest(
        shell: "/bin/sh", script: script, environment: environment + [marker.environmentEntry()],
        workingDirectory: directory, standardOutput: output.writeDescriptor, standardError: output.writeDescriptor)
    let pid = try launchAndWait(request, on: .global()) { exit.fulfil($0) }
    output.closeWriteEnd()
    return TestChild(pid: pid, exit: exit, output: output, tree: ProcessTree(processGroup: pid, marker: marker))
}

/// Processes of `tree` that have not exited, as the killer sees them.
func survivors(of tree: ProcessTree) -> [ProcessEntry] {
    TreeMembership(tree).liveMembers()
}

/// Whether `pid` is gone or a zombie (this VM's PID 1 reaps orphans lazily).
func hasExited(_ pid: Int32) -> Bool {
    ProcessTable.entry(pid)?.hasExited ?? true
}

/// Stops whatever is left of `child` (for the end of a test).
func cleanUp(_ child: TestChild) {
    ProcessTreeKiller.killAll(runID: child.tree.marker.runID, processGroups: [child.pid])
}
