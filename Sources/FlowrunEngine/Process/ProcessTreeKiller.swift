import Dispatch
import Glibc
import Synchronization

/// Kills task process trees: the process group plus every descendant that
/// left it (setsid, double fork) but still carries the tree's FLOWRUN_TREE
/// marker. A process counts as gone once it has exited: zombies are gone.
///
/// Limits: a descendant that both leaves the group and drops the marker
/// (`setsid env -i …`) is not found by `terminate`; flowrun is a child
/// subreaper, so it stays a descendant of flowrun, where
/// `killAll(…, includingEveryDescendant:)` finds it. Descendants are killed
/// whatever their user (see `TreeMembership`). Keep the killer for the life
/// of the run: terminations in progress end with it.
final class ProcessTreeKiller: Sendable {
    /// Serial; owns every `TreeTermination` and its sources and timers.
    private let queue = DispatchQueue(label: "flowrun.tree-killer")
    /// Trees being stopped, so a second request joins the first instead of
    /// signalling again. Owned by its mutex.
    private let active = Mutex<[ProcessTree: TreeTermination]>([:])

    init() {}

    /// Stops `tree` through `steps` (each signal once to every process of
    /// the tree, the next step after its grace, on a Dispatch timer: no
    /// waiting thread) and calls `completion` on `completionQueue` once no
    /// process of the tree is left. Processes that appear during a grace (a
    /// trap's clean-up) are waited for, not signalled, until the grace ends.
    /// Calling again for a tree being stopped adds the completion, and, when
    /// the new steps begin with `.kill`, ends the grace in progress with SIGKILL.
    func stop(
        _ tree: ProcessTree, through steps: [TeardownStep], on completionQueue: DispatchQueue,
        completion: @escaping @Sendable () -> Void
    ) {
        queue.async { [self] in
            let (termination, isNew) = termination(for: tree)
            termination.notify(on: completionQueue, completion)
            if isNew {
                termination.start(steps)
            } else if steps.first == .kill {
                termination.kill()
            }
        }
    }

    /// SIGTERM, SIGKILL after `grace`: `stop` through `TeardownStep.graceful`.
    func terminate(
        _ tree: ProcessTree, grace: Duration, on completionQueue: DispatchQueue,
        completion: @escaping @Sendable () -> Void
    ) {
        stop(tree, through: TeardownStep.graceful(grace), on: completionQueue, completion: completion)
    }

    /// SIGKILL now (without a SIGTERM first unless one was sent already),
    /// ending the grace of a stop in progress: `stop` through `.immediate`.
    func kill(_ tree: ProcessTree, on completionQueue: DispatchQueue, completion: @escaping @Sendable () -> Void) {
        stop(tree, through: TeardownStep.immediate, on: completionQueue, completion: completion)
    }

    /// The tree's termination, made if there is none; on `queue`.
    private func termination(for tree: ProcessTree) -> (TreeTermination, isNew: Bool) {
        active.withLock { active in
            if let existing = active[tree] { return (existing, false) }
            let made = TreeTermination(tree: tree, queue: queue) { [weak self] finished in
                self?.active.withLock { active in
                    if active[finished.tree] === finished { active[finished.tree] = nil }
                }
            }
            active[tree] = made
            return (made, true)
        }
    }

    /// Whether the process group still has a member that has not exited,
    /// e.g. after its leader exited but left a background job. Cheap when the
    /// group is empty (one `kill(-pgid, 0)`); otherwise reads /proc so that
    /// zombies do not count.
    static func hasLiveMembers(processGroup: Int32) -> Bool {
        if Glibc.kill(-processGroup, 0) != 0 && errno == ESRCH { return false }
        return ProcessTable.processIDs().contains { pid in
            guard let entry = ProcessTable.entry(pid) else { return false }
            return entry.processGroup == processGroup && !entry.hasExited
        }
    }

    /// flowrun's last resort (a second signal, or the final clean-up before
    /// exit): SIGKILL, at once, every process that carries a marker of run
    /// `runID`, is in one of `processGroups`, or (if `includingEveryDescendant`)
    /// descends from flowrun, whatever its user, session, environment or
    /// name; waits for them to exit, then looks again, until a look finds
    /// nothing alive or `timeout` has passed. Blocks the calling thread.
    /// Returns the pids still alive at the end (normally none).
    @discardableResult
    static func killAll(
        runID: String, processGroups: Set<Int32> = [], includingEveryDescendant: Bool = false,
        timeout: Duration = .seconds(2)
    ) -> [Int32] {
        let membership = TreeMembership(
            processGroups: processGroups, marker: .run(runID), includesEveryDescendant: includingEveryDescendant)
        let deadline = ContinuousClock.now + timeout
        var handles: [ProcessIdentity: ProcessHandle] = [:]
        while true {
            let live = membership.liveMembers()
            if live.isEmpty { return [] }
            for group in Set(live.map(\.processGroup)) where processGroups.contains(group) {
                Glibc.kill(-group, SIGKILL)
            }
            var waiting: [ProcessHandle] = []
            for entry in live {
                guard let handle = handles[entry.identity] ?? ProcessHandle(entry) else { continue }
                handles[entry.identity] = handle
                handle.send(SIGKILL)
                waiting.append(handle)
            }
            if waiting.isEmpty {
                // No pidfd could be opened: each just exited, or no descriptor
                // is left. The pid was read a moment ago; kill by it, look again soon.
                for entry in live { Glibc.kill(entry.pid, SIGKILL) }
                usleep(1000)
            }
            // Wait for the pidfds to poll readable (exited), not for a sleep;
            // then look again: something may have forked or re-parented meanwhile.
            waitForExit(of: waiting, until: deadline)
            if ContinuousClock.now >= deadline {
                return membership.liveMembers().map(\.pid)
            }
        }
    }

    /// Polls the handles' pidfds until each has exited or `deadline` passed.
    private static func waitForExit(of handles: [ProcessHandle], until deadline: ContinuousClock.Instant) {
        var waiting = handles
        while !waiting.isEmpty {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return }
            var items = waiting.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            if poll(&items, nfds_t(items.count), milliseconds) < 0 && errno != EINTR { return }
            waiting = zip(waiting, items).filter { $1.revents == 0 }.map(\.0)
        }
    }
}
