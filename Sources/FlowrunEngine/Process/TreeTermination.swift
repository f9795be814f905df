import CFlowrunSystem
import Dispatch
import Glibc

/// Stopping one tree through its teardown steps (SIGTERM once to every
/// member, SIGKILL to whatever is left after the grace), done when no member
/// is left alive.
///
/// Every property is read and written only on `queue` (the killer's serial
/// queue); that confinement is why this is `@unchecked Sendable`.
final class TreeTermination: @unchecked Sendable {
    private enum Phase { case terminating, killing, finished }

    /// A live member we wait for: its pidfd (closed by the source's cancel
    /// handler, once the source no longer uses it) and the read source on it.
    private struct Watch {
        var entry: ProcessEntry
        var pidfd: Int32
        var source: any DispatchSourceRead

        func send(_ signal: Int32) { flowrun_pidfd_send_signal(pidfd, signal) }
    }

    let tree: ProcessTree
    private let queue: DispatchQueue
    private let membership: TreeMembership
    private var phase = Phase.terminating
    private var watches: [ProcessIdentity: Watch] = [:]
    private var graceTimer: (any DispatchSourceTimer)?
    private var completions: [(DispatchQueue, @Sendable () -> Void)] = []
    private let onFinish: @Sendable (TreeTermination) -> Void

    init(tree: ProcessTree, queue: DispatchQueue, onFinish: @escaping @Sendable (TreeTermination) -> Void) {
        self.tree = tree
        self.queue = queue
        membership = TreeMembership(tree)
        self.onFinish = onFinish
    }

    deinit {
        // Only if the killer went away mid-way: sources must be cancelled to be freed.
        for watch in watches.values { watch.source.cancel() }
        graceTimer?.cancel()
    }

    /// Adds a completion; it runs once, on `completionQueue`, when the tree is gone.
    func notify(on completionQueue: DispatchQueue, _ completion: @escaping @Sendable () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        completions.append((completionQueue, completion))
    }

    /// Runs `steps` in order: each signal to every member now, the next
    /// step after its grace; `.kill` at once. Called once, on a new termination.
    func start(_ steps: [TeardownStep]) {
        dispatchPrecondition(condition: .onQueue(queue))
        run(steps[...])
    }

    private func run(_ steps: ArraySlice<TeardownStep>) {
        guard phase == .terminating, let step = steps.first else { return }
        switch step {
        case .kill:
            kill()
        case .signal(let signal, let grace):
            let members = membership.liveMembers()
            _ = watch(members)
            self.signal(members, signal, to: Array(watches.values))
            // A stopped process would keep the signal pending until the SIGKILL.
            if signal != SIGKILL && signal != SIGCONT { self.signal(members, SIGCONT, to: Array(watches.values)) }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + grace.dispatchInterval)
            timer.setEventHandler { [weak self] in self?.run(steps.dropFirst()) }
            timer.activate()
            graceTimer?.cancel()
            graceTimer = timer
            checkDone()
        }
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
        signal(members, SIGKILL, to: Array(watches.values))
        checkDone()
    }

    /// Sends `signal` to the process group (once, while it has a live member:
    /// a group with no member may have had its id reused) and through each
    /// pidfd outside the group. Group members get it from the group signal
    /// alone, so SIGTERM reaches each of them exactly once. SIGKILL goes both
    /// ways.
    private func signal(_ members: [ProcessEntry], _ signal: Int32, to watched: [Watch]) {
        if members.contains(where: { $0.processGroup == tree.processGroup }) {
            Glibc.kill(-tree.processGroup, signal)
        }
        for watch in watched where signal == SIGKILL || watch.entry.processGroup != tree.processGroup {
            watch.send(signal)
        }
    }

    /// Starts waiting for members not yet watched; returns the new watches.
    private func watch(_ members: [ProcessEntry]) -> [Watch] {
        var added: [Watch] = []
        for entry in members where watches[entry.identity] == nil {
            guard let handle = ProcessHandle(entry) else { continue }  // already gone
            let identity = entry.identity
            let pidfd = handle.takeDescriptor()
            let source = DispatchSource.makeReadSource(fileDescriptor: pidfd, queue: queue)
            source.setEventHandler { [weak self] in self?.memberExited(identity) }
            source.setCancelHandler { close(pidfd) }
            source.activate()
            let watch = Watch(entry: entry, pidfd: pidfd, source: source)
            watches[identity] = watch
            added.append(watch)
        }
        return added
    }

    private func memberExited(_ identity: ProcessIdentity) {
        guard let watch = watches.removeValue(forKey: identity) else { return }
        watch.source.cancel()
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
            if phase == .killing { signal(members, SIGKILL, to: fresh) }
            if !watches.isEmpty { return }
            // None could be opened (each exited first, or no descriptor was
            // left): look again shortly.
            queue.asyncAfter(deadline: .now() + .milliseconds(10)) { [weak self] in self?.checkDone() }
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
