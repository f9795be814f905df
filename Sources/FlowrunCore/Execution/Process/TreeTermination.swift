import Dispatch
import Glibc

/// Stopping one tree: SIGTERM once to every member, SIGKILL to whatever is
/// left after the grace, done when no member is left alive.
///
/// Every property is read and written only on `queue` (the killer's serial
/// queue); that confinement is why this is `@unchecked Sendable`.
final class TreeTermination: @unchecked Sendable {
    private enum Phase { case terminating, killing, finished }

    /// A live member we wait for: its pidfd and the read source on it.
    private struct Watch {
        var handle: ProcessHandle
        var source: any DispatchSourceRead
    }

    /// Identifies a process across pid reuse.
    private struct Identity: Hashable {
        var pid: Int32
        var startTime: UInt64
        init(_ entry: ProcessEntry) { pid = entry.pid; startTime = entry.startTime }
    }

    let tree: ProcessTree
    private let queue: DispatchQueue
    private let membership: TreeMembership
    private var phase = Phase.terminating
    private var watches: [Identity: Watch] = [:]
    private var graceTimer: (any DispatchSourceTimer)?
    private var completions: [(DispatchQueue, @Sendable () -> Void)] = []
    private let onFinish: @Sendable (TreeTermination) -> Void

    init(tree: ProcessTree, queue: DispatchQueue, onFinish: @escaping @Sendable (TreeTermination) -> Void) {
        self.tree = tree
        self.queue = queue
        membership = TreeMembership(tree)
        self.onFinish = onFinish
    }

    /// Adds a completion; it runs once, on `completionQueue`, when the tree is gone.
    func notify(on completionQueue: DispatchQueue, _ completion: @escaping @Sendable () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        completions.append((completionQueue, completion))
    }

    /// SIGTERM to every member now, SIGKILL after `grace`.
    func start(grace: Duration) {
        dispatchPrecondition(condition: .onQueue(queue))
        let members = membership.liveMembers()
        signal(members, SIGTERM, handles: watch(members))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + grace.dispatchInterval)
        timer.setEventHandler { [weak self] in self?.kill() }
        timer.activate()
        graceTimer = timer
        checkDone()
    }

    /// SIGKILL to every member now (the grace ran out, or flowrun is told to
    /// stop at once); later arrivals get SIGKILL too.
    func kill() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard phase != .finished, phase != .killing else { return }
        phase = .killing
        graceTimer?.cancel()
        graceTimer = nil
        let members = membership.liveMembers()
        _ = watch(members)
        signal(members, SIGKILL, handles: watches.values.map(\.handle))
        checkDone()
    }

    /// Sends `signal` to the process group (once, while it has a live member:
    /// a group with no member may have had its id reused) and through each
    /// handle outside the group. Group members get it from the group signal
    /// alone, so SIGTERM reaches each of them exactly once.
    private func signal(_ members: [ProcessEntry], _ signal: Int32, handles: [ProcessHandle]) {
        if members.contains(where: { $0.processGroup == tree.processGroup }) {
            Glibc.kill(-tree.processGroup, signal)
        }
        for handle in handles where signal == SIGKILL || handle.entry.processGroup != tree.processGroup {
            handle.send(signal)
        }
    }

    /// Starts waiting for members not yet watched; returns their handles.
    private func watch(_ members: [ProcessEntry]) -> [ProcessHandle] {
        var opened: [ProcessHandle] = []
        for entry in members where watches[Identity(entry)] == nil {
            guard let handle = ProcessHandle(entry) else { continue }  // already gone
            let identity = Identity(entry)
            let source = DispatchSource.makeReadSource(fileDescriptor: handle.descriptor, queue: queue)
            source.setEventHandler { [weak self] in self?.memberExited(identity) }
            source.activate()
            watches[identity] = Watch(handle: handle, source: source)
            opened.append(handle)
        }
        return opened
    }

    private func memberExited(_ identity: Identity) {
        guard let watch = watches.removeValue(forKey: identity) else { return }
        watch.source.cancel()
        // The pidfd must outlive the source's registration: close it in the
        // cancel handler, which runs after the source is unregistered.
        let fd = watch.handle.takeDescriptor()
        watch.source.setCancelHandler { close(fd) }
        checkDone()
    }

    /// When no watched member is left, looks again: a member may have forked
    /// after the last look. New members are watched (and killed, once
    /// killing); none left means the tree is gone.
    private func checkDone() {
        guard phase != .finished, watches.isEmpty else { return }
        let members = membership.liveMembers()
        if !members.isEmpty {
            let fresh = watch(members)
            if phase == .killing { signal(members, SIGKILL, handles: fresh) }
            if !watches.isEmpty { return }
            // Every one of them exited before we could open it: look again soon.
            queue.asyncAfter(deadline: .now() + .milliseconds(1)) { [weak self] in self?.checkDone() }
            return
        }
        phase = .finished
        graceTimer?.cancel()
        graceTimer = nil
        for (completionQueue, completion) in completions { completionQueue.async(execute: completion) }
        completions.removeAll()
        onFinish(self)
    }
}

extension Duration {
    /// This duration for Dispatch, at nanosecond precision (negative is 0).
    fileprivate var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return .nanoseconds(0) }
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, nanoseconds.partialValue < Int64(Int.max) - 1_000_000_000 else { return .never }
        return .nanoseconds(Int(nanoseconds.partialValue + attoseconds / 1_000_000_000))
    }
}
