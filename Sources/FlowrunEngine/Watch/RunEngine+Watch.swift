import Dispatch
import Glibc
import FlowrunModel
package import FlowrunRecord
package import FlowrunEvents

/// `flowrun watch` (SPEC §14): one engine, run after run. The first run
/// runs the targets; then a change to a file a task's `sources:` can match
/// (debounced: a burst of writes is one change) marks that task and what
/// depends on it to run again, and the next run — with its own record and
/// console — runs exactly those; the rest keep their results (and ready
/// services keep running, unless their own sources changed: then they are
/// stopped, their port waited for, and started again). A change during a
/// run cancels the affected tasks that are running; the next run starts
/// them again as soon as this one ends.
package final class WatchState: @unchecked Sendable {
    // @unchecked: touched only on the engine's queue once the watch starts (checked at the entries).
    /// Makes the next run's record and console reporters.
    let nextRun: () throws -> (record: RunRecord, reporters: [any RunReporter])
    /// The inotify instance (read on the event loop's thread).
    var watcher: SourceWatcher?
    /// Each task's sources and generated files, as patterns with their base folder.
    var sources: [(index: Int, pattern: GlobPattern, base: String)] = []
    var generates: [(pattern: GlobPattern, base: String)] = []
    /// Fan-outs' sources that only the run fills in: every path under the literal text before the first `${{`
    /// that ends with the glob's literal tail (`.c` for `src/${{ item }}.c`; see `endsWithTail`), by group.
    var prefixes: [(index: Int, prefix: String, tail: String)] = []
    /// Such templates' generated files: the literal text before the first `${{` and after the last `}}`.
    var templatedGenerates: [(prefix: String, suffix: String)] = []
    /// Fan-outs whose member template needs a task outside the group, by that task.
    var fanOutsNeeding: [Int: [Int]] = [:]
    /// Each fan-out's members as they ended in the last run that ran it.
    var keptFanOuts: [Int: KeptFanOut] = [:]
    /// Between runs: waiting for a change.
    var idle = false
    /// Nodes the next run runs again, and the file that first asked for it.
    var pending: Set<Int> = []
    var trigger: String?
    /// Changed paths not yet looked at (the debounce's), each once however often it changed, and its timer.
    var noticed: Set<String> = []
    var debounce: (any DispatchSourceTimer)?
    var firstNoticed: DispatchTime?
    /// The next run waits for these services to be gone (and their ports free).
    var stoppingServices: Set<Int> = []
    var portWaits = 0
    /// Runs so far.
    var runs = 1

    /// How long a burst of writes may go quiet before it counts as one change.
    static let quiet: DispatchTimeInterval = .milliseconds(150)
    /// However long a burst goes on, a change is looked at after this.
    static let longest: DispatchTimeInterval = .milliseconds(700)

    package init(nextRun: @escaping () throws -> (record: RunRecord, reporters: [any RunReporter])) {
        self.nextRun = nextRun
    }
}

extension RunEngine {
    /// Makes this engine's run the first of a watch (`flowrun watch`); set before `run()`.
    package func watches(nextRun: @escaping () throws -> (record: RunRecord, reporters: [any RunReporter])) {
        watchState = WatchState(nextRun: nextRun)
    }

    /// On the queue, before the first run's tasks: the watches, on every
    /// folder the targets' `sources:` can match (new folders included).
    func startWatching() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let watch = watchState else { return }
        var roots: [(folder: String, recursive: Bool)] = []
        for index in nodes.indices where nodes[index].kind == .task && !nodes[index].isFinally {
            guard let task = nodes[index].definition?.value else { continue }
            // Filled in as the run fills them in (`${{ vars.dir }}/src/**`); one that reads another task's value cannot be.
            let base = task.cwd.flatMap { try? renderText($0, for: index) } ?? ""
            for source in task.sources {
                guard let text = try? renderText(source, for: index), let pattern = try? GlobPattern.parse(text) else { continue }
                watch.sources.append((index, pattern, base))
                let root = pattern.watchRoot
                roots.append((Self.joinedPath(base, root.folder), root.recursive))
                // A source that is a folder (`sources: [src]`, hashed by its list of names): watched itself.
                if let folder = Self.folderSource(text, base) { roots.append((folder, false)) }
            }
            for generated in task.generates {
                if let text = try? renderText(generated, for: index), let pattern = try? GlobPattern.parse(text) { watch.generates.append((pattern, base)) }
            }
        }
        watchFanOuts(watch, roots: &roots)
        let recordFolder = Self.relativeToHere(Self.parent(of: record.directory))
        let skip: @Sendable (String) -> Bool = { path in
            path == ".flowrun" || path.hasPrefix(".flowrun/") || path.hasSuffix("/.flowrun") || path.contains("/.flowrun/")
                || (!recordFolder.isEmpty && (path == recordFolder || path.hasPrefix(recordFolder + "/")))
        }
        do throws(SourceWatcher.Problem) {
            let watcher = try SourceWatcher(skip: skip)
            for root in Self.distinct(roots) {
                // A root not made yet is waited for from its nearest folder that exists, watched alone
                // (that folder watched whole could be `/tmp`, or miss `/data` made at the top).
                if Self.exists(root.folder) { try watcher.add(root.folder, recursive: root.recursive) } else { watcher.await(root.folder, recursive: root.recursive) }
            }
            if let problem = watcher.takeLateProblem() { throw problem }
            watch.watcher = watcher
            loop.watch(watcher.descriptor) { [loop, weak self] in
                let changed = watcher.drain()
                let problem = watcher.takeLateProblem()
                guard !changed.isEmpty || problem != nil else { return }
                loop.deliver { self?.noticed(changed, problem: problem) }
            }
        } catch {
            // Never a silent miss: the watch cannot keep its promise, so it ends, saying why.
            _ = writeAll(STDERR_FILENO, "flowrun watch: \(error.description)\n")
            watchFailed = true
            stop(because: .watchFailed)
        }
    }

    /// On the queue: paths the watcher saw change; looked at once the burst goes quiet.
    private func noticed(_ paths: [String], problem: SourceWatcher.Problem?) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let watch = watchState, stopping == nil else { return }
        if let problem {
            _ = writeAll(STDERR_FILENO, "flowrun watch: \(problem.description)\n")
            watchFailed = true
            stop(because: .watchFailed)
            return
        }
        watch.noticed.formUnion(paths)
        let now = DispatchTime.now()
        if watch.firstNoticed == nil { watch.firstNoticed = now }
        let due = min(now + WatchState.quiet, watch.firstNoticed! + WatchState.longest)
        watch.debounce?.cancel()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: due)
        timer.setEventHandler { [weak self] in self?.changesSettled() }
        watch.debounce = timer
        timer.resume()
    }

    /// The burst is over: which tasks it touches, and what depends on them.
    private func changesSettled() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let watch = watchState, stopping == nil else { return }
        watch.debounce?.cancel()
        watch.debounce = nil
        watch.firstNoticed = nil
        let paths = watch.noticed.sorted()
        watch.noticed = []
        var touched: Set<Int> = []
        var trigger: String?
        for path in paths {
            // An overflow of the kernel's queue lost events: every watched task counts as changed.
            if path.isEmpty {
                touched.formUnion(watch.sources.map(\.index))
                trigger = trigger ?? "(events lost: everything watched)"
                continue
            }
            if path.hasSuffix("/") {
                // A folder moved away: every task whose sources could match something under it.
                let folder = String(path.dropLast())
                let owners = watch.sources.filter { source in
                    let root = source.pattern.watchRoot
                    let rootFolder = Self.joinedPath(source.base, root.folder)
                    return (root.recursive && (rootFolder.isEmpty || folder == rootFolder || folder.hasPrefix(rootFolder + "/")))
                        || rootFolder == folder || rootFolder.hasPrefix(folder + "/")
                }.map(\.index) + watch.prefixes.filter { folder.hasPrefix($0.prefix) || $0.prefix.hasPrefix(folder + "/") }.map(\.index)
                if !owners.isEmpty, trigger == nil { trigger = path }
                touched.formUnion(owners)
                continue
            }
            if watch.generates.contains(where: { Self.watchMatches($0.pattern, $0.base, path) }) { continue }
            if watch.templatedGenerates.contains(where: { path.count >= $0.prefix.count + $0.suffix.count && path.hasPrefix($0.prefix) && path.hasSuffix($0.suffix) }) { continue }
            // A file made, removed or renamed in a folder a glob names is a change of that folder's list of names.
            let folder = Self.parent(of: path)
            let owners = watch.sources.filter { Self.watchMatches($0.pattern, $0.base, path) || (!folder.isEmpty && Self.watchMatches($0.pattern, $0.base, folder)) }.map(\.index)
                + watch.prefixes.filter { path.hasPrefix($0.prefix) && Self.endsWithTail(path, $0.tail) }.map(\.index)
            if !owners.isEmpty, trigger == nil { trigger = path }
            touched.formUnion(owners)
        }
        guard !touched.isEmpty else { return }
        let affected = closure(of: touched)
        watch.trigger = watch.trigger ?? trigger
        watch.pending.formUnion(affected)
        if watch.idle {
            startNextRun()
        } else {
            // During a run: the affected tasks running now are stopped; the next run starts them again.
            // A group is not cancelled whole: its affected members are (a fan-out's, those whose own sources changed).
            for index in affected.sorted() where nodes.contains(index) && nodes[index].kind == .task {
                if isServing(index) { continue }  // stopped before the next run, not counted as cancelled here
                let status = nodes[index].status
                if status == .running || status == .waiting { cancel(index, reason: .sourcesChanged) }
            }
            for group in affected.sorted() where fanOuts[group] != nil && nodes[group].status == .running {
                // Reached through a need (not its members' sources): every member is affected.
                let stopped = touched.contains(group) ? membersWhoseSourcesChanged(group, paths) : members(of: group)
                for member in stopped where nodes.contains(member) && !isServing(member) {
                    let status = nodes[member].status
                    if status == .running || status == .waiting { cancel(member, reason: .sourcesChanged) }
                }
            }
        }
    }

    /// `touched` and every node that depends on one of them, transitively.
    /// A group that depends on one runs again whole (its members wait for
    /// its needs); a member's group is decided again with only that member
    /// run again, and what needs the group runs again.
    private func closure(of touched: Set<Int>) -> Set<Int> {
        var result = touched
        var queue = Array(touched)
        func add(_ index: Int) {
            if nodes.contains(index), result.insert(index).inserted { queue.append(index) }
        }
        while let next = queue.popLast() {
            if let group = nodes[next].group { add(group) }
            // A join whose member runs again runs again; a fan-out runs again with its static members.
            nodes[next].joins.forEach(add)
            watchState?.fanOutsNeeding[next]?.forEach(add)
            if fanOuts[next] != nil { nodes[next].members.filter { $0 < nodes.count }.forEach(add) }
            for dependent in nodes[next].dependents where nodes.contains(dependent) {
                add(dependent)
                if nodes[dependent].kind == .group { nodes[dependent].members.forEach(add) }
            }
        }
        return result
    }

    /// A run of the watch has ended (its record and console are finished): wait for the next change.
    func runEndedUnderWatch() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let watch = watchState else { return }
        watch.idle = true
        // Not from inside the settle that ended this run: the next run lets go of this run's
        // fan-out members, and that settle still reads its member.
        if !watch.pending.isEmpty { queue.async { [weak self] in self?.startNextRun() } }
    }

    /// Between runs, with changes to run: first the affected services are
    /// stopped and their ports freed, then the next run begins.
    private func startNextRun() {
        guard let watch = watchState, watch.idle, stopping == nil else { return }
        // A fan-out run again makes its members afresh: its serving members are stopped too (every one is started again).
        let servingMembers = services.keys.filter { index in
            nodes.contains(index) && nodes[index].index != nil && nodes[index].group.map { watch.pending.contains($0) && fanOuts[$0] != nil } == true
        }
        for index in watch.pending.union(servingMembers) where isServing(index) && !watch.stoppingServices.contains(index) {
            watch.stoppingServices.insert(index)
            services[index]?.stopping = true
            attempts[index]?.cancel(as: .succeeded, reason: "service stopped by flowrun: its sources changed", through: teardown)
        }
        guard watch.stoppingServices.isEmpty, watch.portWaits == 0 else { return }
        beginNextRun()
    }

    /// A service the watch stopped has ended: once its port is free, the next run may begin.
    func serviceStoppedForWatch(_ index: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let watch = watchState, watch.stoppingServices.remove(index) != nil else { return }
        // A fan-out's member is let go as it ends: its probe's address was filled in per item, not a literal.
        if nodes.contains(index), case .tcp(let address)? = nodes[index].definition?.value.ready?.check, address.isLiteral,
           let (host, port) = ReadyProbe.hostAndPort(address.source) {
            watch.portWaits += 1
            waitForFreePort(host: host, port: port, tries: 0)
        } else {
            startNextRun()
        }
    }

    /// Its old tree is reaped; a listener may still hold the port for a moment (another process of its, gone now, a socket closing).
    private func waitForFreePort(host: String, port: Int, tries: Int) {
        guard let watch = watchState else { return }
        if TCPReadinessCheck.isFree(host: host, port: port) || tries >= 100 {
            watch.portWaits -= 1
            startNextRun()
            return
        }
        queue.asyncAfter(deadline: .now() + .milliseconds(50)) { [weak self] in self?.waitForFreePort(host: host, port: port, tries: tries + 1) }
    }

    private func beginNextRun() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let watch = watchState else { return }
        let next: (record: RunRecord, reporters: [any RunReporter])
        do {
            next = try watch.nextRun()
        } catch {
            _ = writeAll(STDERR_FILENO, "flowrun watch: cannot start the next run: \(error)\n")
            watchFailed = true
            stop(because: .watchFailed)
            return
        }
        watch.idle = false
        watch.runs += 1
        // What the run before found must be looked at again (`ContentHashCache`).
        reuse.store?.hashes.runStarting()
        var pending = watch.pending
        // Members a join run again cancelled as not needed in an earlier run have no result of their
        // own to keep: they run with it, as in a fresh run (cancelled again at once, below, when the
        // kept successes meet its quorum). Kept cancelled, a join short of its quorum failed where a
        // fresh run would have run them and succeeded.
        // A join among them (nested) brings its own such members; a static group, its members.
        var touched: Set<Int> = []
        var joinsToLook = pending.filter { nodes.contains($0) && nodes[$0].kind == .join }
        while let join = joinsToLook.popFirst() {
            for member in nodes[join].members where nodes.contains(member) && wasNotNeeded(member) && touched.insert(member).inserted {
                if nodes[member].kind == .join { joinsToLook.insert(member) }
                if nodes[member].kind == .group && fanOuts[member] == nil { touched.formUnion(nodes[member].members) }
            }
        }
        if !touched.isEmpty { pending.formUnion(closure(of: touched)) }
        let trigger = watch.trigger
        watch.pending = []
        watch.trigger = nil
        record = next.record
        Self.attach(record, queue: queue, loop: loop)
        reporters = [next.record] + next.reporters
        startSeconds = record.start.monotonicSeconds
        startWallSeconds = record.start.wallSeconds
        finished = false
        finalExitCode = nil
        finallyStarted = false
        groupsWithAStartedMember = []
        // What runs again: the affected tasks, and `finally` (it closes every run).
        var again: [Int] = []
        for index in nodes.indices where nodes[index].kind == .task {
            if nodes[index].isFinally || pending.contains(index) {
                again.append(index)
            } else if !isServing(index), nodes[index].status == .succeeded {
                nodes[index].reused = .restored  // kept from the run before, as `resume` keeps a task
            }
        }
        // Static groups decided again: pending, their counters as before their first start.
        let groups = pending.filter { nodes.contains($0) && nodes[$0].kind == .group }.sorted()
        for group in groups {
            cancelTimer(.group(group))
            nodes[group].status = .pending
            (nodes[group].startedAt, nodes[group].finishedAt, nodes[group].cancelReason) = (nil, nil, nil)
            nodes[group].groupTimedOut = false
            nodes[group].unsettledMembers = 0
            nodes[group].skippedByOwnCondition = false
        }
        // Fan-outs run again start from their first item; the others keep their members' ends.
        prepareFanOutsForNextRun(watch, again: Set(groups))
        // Joins run again: their counts and clocks as before, for the members that run again.
        let joins = pending.filter { nodes.contains($0) && nodes[$0].kind == .join }.sorted()
        for join in joins { resetJoinForNextRun(join, rerunning: pending) }
        for index in again {
            let keep = (name: nodes[index].name, needs: nodes[index].needs, dependents: nodes[index].dependents, definition: nodes[index].definition,
                        isFinally: nodes[index].isFinally, timeout: nodes[index].timeout, demand: nodes[index].demand, runsAfter: nodes[index].runsAfter,
                        group: nodes[index].group, joins: nodes[index].joins)
            var node = RunNode(kind: .task, name: keep.name)
            (node.needs, node.dependents, node.definition, node.isFinally, node.timeout, node.demand, node.runsAfter, node.group, node.joins) =
                (keep.needs, keep.dependents, keep.definition, keep.isFinally, keep.timeout, keep.demand, keep.runsAfter, keep.group, keep.joins)
            nodes[index] = node
        }
        again += groups + joins
        let againSet = Set(again)
        // Waits for its needs that run again, for the step it runs after (targets in the
        // order given) if that runs again, and for its group to start.
        for index in again {
            let after = nodes[index].runsAfter.map { againSet.contains($0) && !nodes[index].needs.contains($0) ? 1 : 0 } ?? 0
            let group = nodes[index].group.map { againSet.contains($0) ? 1 : 0 } ?? 0
            nodes[index].unsettledNeeds = nodes[index].needs.count(where: { againSet.contains($0) }) + after + group
        }
        unsettledFinally = again.count(where: { nodes[$0].isFinally })
        unsettledMain = again.count - unsettledFinally
        var started = RunEvent.RunStarted(
            runID: record.runID, workflow: plan.workflow.name, path: record.directory,
            maxParallel: pool.capacity(of: Self.runSlots),
            members: again.count(where: { nodes[$0].kind == .task && !nodes[$0].isFinally })
                + groups.reduce(0) { $0 + (fanOuts[$1].flatMap { $0.items?.count ?? $0.source.staticCount } ?? 0) },
            timeoutSeconds: plan.runTimeout?.seconds)
        started.trigger = trigger ?? "(a change)"
        let sizedAtRunTime = groups.filter { fanOuts[$0].map { $0.source.staticCount == nil } ?? false }.map { nodes[$0].name }
        if !sizedAtRunTime.isEmpty { started.sizedAtRunTime = sizedAtRunTime }
        emit(event(.runStarted(started)))
        // The workflow's `timeout:` bounds each run of the watch, as it bounds the first (its
        // timer ended with the run before); firing, it stops that run, not the watch.
        if let timeout = plan.runTimeout {
            startTimer(.run, after: timeout) { $0.stop(because: .runTimeout) }
        }
        // Kept results that meet a join's quorum complete it now: what would run again for it is not needed.
        for join in joins { completeJoinByKeptResults(join) }
        for index in again where !nodes[index].isFinally && nodes[index].unsettledNeeds == 0 { needsSettled(index) }
        finishIfDone()
    }

    /// Whether a join's quorum (or deadline) cancelled `index` in an earlier run as not needed: it
    /// has no result of its own to keep. A group so cancelled ends `succeeded` by its members' rules
    /// (none of them failed) with none succeeded: it is one too, not a kept success.
    func wasNotNeeded(_ index: Int) -> Bool {
        if nodes[index].status == .cancelled && nodes[index].cancelReason == .joinSettled { return true }
        guard nodes[index].kind == .group, nodes[index].status == .succeeded else { return false }
        if let progress = fanOutProgress[index] { return progress.drainReason == .joinSettled && progress.succeeded == 0 }
        let members = nodes[index].members
        return !members.isEmpty && members.allSatisfy { nodes.contains($0) && nodes[$0].status == .cancelled && nodes[$0].cancelReason == .joinSettled }
    }

    /// Stopped between runs (Ctrl-C, a problem with the watch): once its services are gone, the watch ends.
    /// True when the watch is between runs (nothing else to finish).
    func finishWatchIfStopped() -> Bool {
        guard let watch = watchState, watch.idle else { return false }
        if stopping != nil && services.isEmpty {
            watch.idle = false
            watch.debounce?.cancel()
            // Ctrl-C ends the watch with 130 (128 + the signal), whatever the last run ended with:
            // a failed run before it is in that run's record, not the watch's end.
            if stopSignal != nil || killedBy != nil || finalExitCode == 0 || finalExitCode == nil { finalExitCode = exitCode() }
            done.signal()
        }
        return true
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        var parent = String(path[..<slash])
        if parent.hasPrefix("./") { parent.removeFirst(2) }
        return parent
    }

    /// An absolute path under the current folder, as the watch spells paths (relative); others unchanged.
    private static func relativeToHere(_ path: String) -> String {
        guard path.hasPrefix("/") else { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let here = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasPrefix(here + "/") ? String(path.dropFirst(here.count + 1)) : path
    }

    /// Each folder once, watched recursively if any glob asks for it.
    private static func distinct(_ roots: [(folder: String, recursive: Bool)]) -> [(folder: String, recursive: Bool)] {
        var recursive: [String: Bool] = [:]
        var order: [String] = []
        for root in roots {
            if recursive[root.folder] == nil { order.append(root.folder) }
            recursive[root.folder] = (recursive[root.folder] ?? false) || root.recursive
        }
        return order.map { ($0, recursive[$0]!) }
    }

    /// A glob with no wildcard that names a folder (`src`, `src/`): that folder, as the watch spells it.
    private static func folderSource(_ text: String, _ base: String) -> String? {
        guard !text.contains(where: { "*?[]\\".contains($0) }) else { return nil }
        var name = text
        while name.count > 1 && name.hasSuffix("/") { name.removeLast() }
        let folder = joinedPath(base, name)
        var info = stat()
        guard !folder.isEmpty, stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return folder
    }

    private static func exists(_ folder: String) -> Bool {
        var info = stat()
        return stat(folder.isEmpty ? "." : folder, &info) == 0
    }
}
