import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues
import FlowrunEvents

/// From "needs settled" to "finished": deciding, waiting for slots, attempts,
/// retries, and telling whatever waits on a node that it has settled.
extension RunEngine {
    /// Every need of `index` has settled (and, for a member, its group has started).
    func needsSettled(_ index: Int) {
        let when: RunCondition
        switch nodes[index].kind {
        case .task: when = nodes[index].definition?.value.when ?? .success
        case .group: when = groupConditions[index]?.when ?? .success
        case .join: when = .success
        }
        switch scheduler.readiness(of: index, when: when) {
        case .settled, .waitsForMembers:
            return
        case .cancel(let reason):
            settle(index, .cancelled, reason: reason)
            return
        case .outOfOrder(let previous):
            let why = orderSkipReason(index, after: previous)
            if nodes[index].kind == .group { skipGroup(index, why: why) } else { settle(index, .skipped, why: why) }
            return
        case .skip(let why):
            if nodes[index].kind == .group { skipGroup(index, why: why) } else { settle(index, .skipped, why: why) }
            return
        case .run:
            break
        }
        switch nodes[index].kind {
        case .group:
            if groupPassesItsCondition(index) { activateGroup(index) }
        case .join:
            break
        case .task:
            guard let task = nodes[index].definition else { return }
            if let condition = task.value.condition {
                let holds: Bool
                do throws(TemplateRenderError) {
                    try ValueLimit.check(condition.value, at: condition.location, in: context(for: index), measuringValues: true)
                    // Only a function can fail (fromJSON() of text that is not JSON); a missing value reads as ''.
                    holds = try ExpressionEvaluator.isTrue(condition.value, at: condition.location, in: context(for: index))
                } catch {
                    settle(index, .failed, why: error.description)
                    return
                }
                guard holds else {
                    nodes[index].skippedByOwnCondition = true
                    settle(index, .skipped, why: "if: \(condition.value) is false")
                    return
                }
            }
            if settlesWithoutRunning(index) { return }
            if task.value.hasComputedSemaphores, let problem = takeComputedSemaphores(index) {
                settle(index, .failed, why: problem)
                return
            }
            enqueue(index)
        }
    }

    /// Whether a node that became ready must be cancelled instead (`Scheduler.stopReason`).
    func stopReason(for index: Int) -> CancelReason? {
        scheduler.stopReason(for: index)
    }

    /// Asks for slots; starts at once if they are free, else reports what it waits on.
    func enqueue(_ index: Int) {
        guard scheduler.enqueue(index), let demand = nodes[index].demand else { return }
        admitWaiters()
        if nodes[index].status == .waiting {
            if waitsOnlyForItsFanOutsSlots(index, demand.resources) { return }
            let shortage = pool.shortage(of: demand)
            if waitsOnlyForItsFanOutsSlots(index, shortage.map(\.resource)) { return }
            // Short of a pool picked per member: the fan-out makes its next members meanwhile.
            if nodes[index].definition?.value.hasComputedSemaphores == true, let group = nodes[index].group {
                fanOutProgress[group]?.parked.insert(index)
            }
            let waitingOn = shortage.map { short in
                guard short.resource == Self.cpuResource || short.resource == Self.memoryResource else {
                    return "\(short.name) \(short.inUse)/\(short.capacity)" + holders(of: short.resource)
                }
                // "memory: needs 2 GiB, 5 GiB of 6 GiB in use held by train, eval"
                let text = { ResourceUnits.text($0, of: short.resource) }
                let needs = demand.amount(of: short.resource) ?? 0
                return "\(short.name): needs \(text(needs)), \(text(short.inUse)) of \(text(short.capacity)) in use" + holders(of: short.resource)
            }
            emit(event(.taskWaiting(.init(task: nodes[index].name, waitingOn: waitingOn))))
        }
    }

    /// A fan-out member short only of the run's slots or its group's (or
    /// holding no other, so that it can lack no other): flowrun
    /// makes members as such slots free up (a few ahead), so the wait is
    /// the fan-out's own pace, and a `task_waiting` line per member would
    /// be most of a long fan-out's record. A wait for a semaphore is said.
    private func waitsOnlyForItsFanOutsSlots(_ index: Int, _ lacking: [Int]) -> Bool {
        guard nodes[index].item != nil, let group = nodes[index].group, let progress = fanOutProgress[group] else { return false }
        return lacking.allSatisfy { $0 == Self.runSlots || $0 == progress.groupResource }
    }

    /// " held by restore, index" — who holds a semaphore or group slot (not
    /// the run's slots: that would be every running task).
    private func holders(of resource: Int) -> String {
        guard resource != Self.runSlots else { return "" }
        let names = attempts.keys.sorted().filter {
            // A ready service gave back its slots but holds its CPUs and memory.
            (nodes[$0].holdsSlots ? nodes[$0].demand : services[$0]?.heldResources)?.amount(of: resource) != nil
        }.map { nodes[$0].name }
        guard !names.isEmpty else { return "" }
        return " held by " + names.prefix(3).joined(separator: ", ") + (names.count > 3 ? " and \(names.count - 3) more" : "")
    }

    func admitWaiters() {
        while let index = scheduler.admitNext() {
            if let group = nodes[index].group, let progress = fanOutProgress[group], !progress.parked.isEmpty { progress.parked.remove(index) }
            startAttempt(index)
        }
    }

    func releaseSlots(_ index: Int) {
        scheduler.releaseSlots(index)
    }

    /// A task's needs and its group's, by name (nil when none): what a
    /// timeline draws arrows from.
    /// A group member names its group's needs only when it is the group's
    /// first member to start: the others waited for the same, and a
    /// fan-out's thousands of lines need not repeat them.
    private func needNames(_ index: Int) -> [String]? {
        var needs = nodes[index].needs
        if let group = nodes[index].group, groupsWithAStartedMember.insert(group).inserted { needs += nodes[group].needs }
        return needs.isEmpty ? nil : needs.map { nodes[$0].name }
    }

    private func startAttempt(_ index: Int) {
        for join in scheduler.markStarted(index, at: elapsed) { armJoinDeadline(join) }
        // What the engine applies, for a reader to check against the plan.
        var started = RunEvent.TaskStarted(
            task: nodes[index].name, attempt: nodes[index].attempt, timeoutSeconds: nodes[index].timeout?.seconds,
            groupTimeoutSeconds: nodes[index].group.flatMap { nodes[$0].timeout?.seconds },
            // Left out when it is one of the run's slots and nothing else (run_started's `max_parallel`).
            limits: nodes[index].demand.flatMap { $0 == Self.runSlotOnly ? nil : limitsJSON($0) })
        // Where its log goes (made at its first byte): `flowrun logs` of a live run reads it from here.
        // A `sleep:` runs nothing and writes no log (naming one was a tenth of a long fan-out's time).
        if case .sleep = nodes[index].definition?.value.action {} else { started.log = logPath(index) }
        if nodes[index].attempt == 1 { started.needs = needNames(index) }
        let service = isService(index)
        if service { started.probe = probeSummary(index) }
        emit(event(.taskStarted(started)))

        let attemptNumber = nodes[index].attempt
        if service { prepareService(index) }
        let attempt = makeAttempt(for: index) { [weak self] result in
            self?.attemptFinished(index, attempt: attemptNumber, result)
        }
        attempts[index] = attempt
        // From now on a file this run hashed may change under it (`ContentHashCache`).
        reuse.store?.hashes.taskStarting()
        // The first attempt: from now on there is something to kill should the supervisor die.
        watchSupervisorLink()
        // The plan's deadline, defaults resolved there (finally's budget, http's whole-request limit).
        if let timeout = nodes[index].timeout {
            let reason = "timed out after \(timeout.text)" + (nodes[index].definition?.value.timeoutNote ?? "")
            startTimer(.timeout(index), after: timeout) { engine in
                engine.attempts[index]?.cancel(as: .timedOut, reason: reason, through: engine.teardown)
            }
        }
        attempt.start()
        if service { startServiceProbe(index) }
    }

    private func attemptFinished(_ index: Int, attempt number: Int, _ result: AttemptResult) {
        // The executors' way back in: every attempt reports on the engine's queue.
        dispatchPrecondition(condition: .onQueue(queue))
        if services[index]?.attempt == number, isServing(index) { return serviceEnded(index, result) }
        guard nodes.contains(index), nodes[index].attempt == number, nodes[index].status == .running else { return }
        var result = result
        if services[index] != nil { serviceEndedBeforeReady(index, &result) }
        attempts[index] = nil
        retryDescriptorWaiters()
        if result.wroteLog { nodes[index].hasLog = true }
        cancelTimer(.timeout(index))
        releaseSlots(index)
        defer { admitWaiters() }
        if isService(index), startsAgainOnceClosedConnectionsGo(index, attempt: number, result) { return }
        attemptEnded(index, attempt: number, result)
    }

    /// Attempt `number` of `index` is over, its slots given back: another attempt after a backoff, or its end.
    func attemptEnded(_ index: Int, attempt number: Int, _ result: AttemptResult) {
        if scheduler.retries(index, after: number, endedAs: result.status) {
            // Back off without holding any slot, then queue again.
            let delay = retryDelay(for: index, after: number)
            scheduler.backOff(index)
            var retrying = RunEvent.TaskRetrying(
                task: nodes[index].name, status: result.status, reason: result.reason, exitCode: result.exitCode,
                signal: result.signal, attempt: number + 1, delay: delay.seconds)
            if result.outOfMemory { retrying.memoryBytes = growMemory(index) }
            emit(event(.taskRetrying(retrying)))
            startTimer(.retry(index), after: delay) { engine in
                if engine.scheduler.backOffEnded(index) { engine.enqueue(index) }
            }
            return
        }
        finish(index, with: result)
        if result.outOfDescriptors && shortOfDescriptors == nil {
            // Nothing would free a descriptor: the run fails now, as it would on any failure under fail_fast.
            shortOfDescriptors = DescriptorLimit.exhausted(openNow: DescriptorLimit.openCount())
            stop(because: .descriptors)
        }
    }

    /// The resources attempt `attempt` of a task runs with: as declared, or
    /// as `retry_resources` grew them.
    func resources(of index: Int) -> ResourceRequest? {
        grownResources[index] ?? nodes[index].definition?.value.resources
    }

    /// After an out-of-memory death: the next attempt's memory, grown by
    /// `retry_resources` (capped at `capacity`), held from its next
    /// admission on. Nil when the task does not grow its memory.
    private func growMemory(_ index: Int) -> UInt64? {
        guard let factor = nodes[index].definition?.value.retryResources?.memoryFactor, let current = resources(of: index),
              current.memoryBytes != nil, let demand = nodes[index].demand else { return nil }
        // On Slurm the cluster admits (`--mem`): no capacity caps it, nothing is held here.
        let onSlurm = runsOnSlurm(index)
        let grown = current.withMemory(times: factor, atMost: onSlurm ? nil : plan.capacity.memoryBytes)
        grownResources[index] = grown
        if onSlurm { return grown.memoryBytes }
        var amounts = Dictionary(uniqueKeysWithValues: Array(demand.pairs))
        amounts[Self.memoryResource] = ResourceUnits.memory(grown.memoryBytes ?? 0)
        nodes[index].demand = SlotPool.Demand(amounts: amounts)
        return grown.memoryBytes
    }

    /// The wait before attempt `number + 1` (`Scheduler.retryDelay`): the
    /// run's deadline is its timer's, armed a few milliseconds after `elapsed`'s zero.
    func retryDelay(for index: Int, after number: Int) -> Duration {
        scheduler.retryDelay(for: index, after: number, runStartedAt: startSeconds)
    }

    /// A task's log in the run record, and where the part inside the record starts.
    private func logPath(_ index: Int) -> RunEvent.LogPath {
        RunEvent.LogPath(path: record.logPath(index: index, name: nodes[index].name), offsetInRecord: record.directory.utf8.count + 1)
    }

    /// Records a task's final result and settles it.
    func finish(_ index: Int, with result: AttemptResult) {
        nodes[index].stash.stdout = result.stdout
        nodes[index].stash.oversizedStdout = result.oversizedStdout.map(Shared.init)
        nodes[index].stash.exitCode = result.exitCode
        nodes[index].stash.outputs = result.outputs
        nodes[index].stash.duration = nodes[index].startedAt.map { elapsed - $0 }
        nodes[index].stash.usage = result.usage
        if result.status == .succeeded && nodes[index].incremental != nil { recordIncrementalSuccess(index) }
        settle(index, result.status, why: result.reason, exitCode: result.exitCode, signal: result.signal)
    }

    func settle(_ index: Int, _ status: TaskStatus, reason: CancelReason) {
        nodes[index].cancelReason = reason
        settle(index, status, why: reason.rawValue)
    }

    /// Makes a node final, reports it, and tells its group, joins and dependents.
    func settle(_ index: Int, _ status: TaskStatus, why: String? = nil, exitCode: Int? = nil, signal: Int? = nil) {
        guard !nodes[index].status.isFinal else { return }
        cancelTimer(.retry(index))
        if !closedConnectionWaits.isEmpty { closedConnectionWaits[index] = nil }
        _ = scheduler.markSettled(index, status, at: elapsed)

        switch nodes[index].kind {
        case .task:
            if status == .succeeded, let variable = computedVariables[index] { setComputedVariable(variable, from: index) }
            var finished = RunEvent.TaskFinished(
                task: nodes[index].name, status: status, attempt: nodes[index].attempt, exitCode: exitCode, signal: signal,
                duration: nodes[index].stash.duration, reason: why,
                allowed: status.isFailure && nodes[index].definition?.value.continueOnError == true,
                cancelledBy: nodes[index].cancelReason == .joinSettled ? cancellingJoin(of: index) : nil,
                reused: nodes[index].reused)
            finished.usage = nodes[index].stash.usage
            if nodes[index].hasLog {
                finished.log = logPath(index)
                if status == .failed || status == .timedOut { finished.logTail = logTail(of: index) }
            }
            if isServing(index) { emitReady(index) } else { emit(event(.taskFinished(finished))) }
            grownResources[index] = nil
            if scheduler.triggersFailFast(index, status, failFast: plan.workflow.failFast) {
                stop(because: .failFast)
            }
        case .group:
            let members: Int, succeeded: Int
            if let progress = fanOutProgress[index] {
                // The static members listed beside `foreach` count too: `succeeded` counts them.
                members = progress.staticMembers + progress.created
                succeeded = progress.succeeded
            } else {
                members = nodes[index].members.count
                succeeded = nodes[index].members.count { nodes[$0].status == .succeeded }
            }
            let finished = RunEvent.GroupFinished(
                group: nodes[index].name, status: status, members: members, succeeded: succeeded,
                duration: nodes[index].startedAt.map { elapsed - $0 }, reason: why)
            emit(event(.groupFinished(finished)))
        case .join:
            emitJoinCompleted(index, status: status)
        }

        if status == .succeeded && scheduler.startsWaitersFirst(index) { admitWaiters() }
        let fanOutMember = nodes[index].index != nil && nodes[index].group.map { fanOutProgress[$0] != nil } == true
        if fanOutMember { recordSettledMember(index) }
        if let group = nodes[index].group { memberSettled(group, member: index) }
        for join in nodes[index].joins { joinMemberSettled(join) }
        for dependent in nodes[index].dependents where scheduler.needSettled(dependent) {
            needsSettled(dependent)
        }
        finishIfDone()
        if fanOutMember { retireMember(index) }
    }

    /// The last lines of a failed task's log, for the reporter and the
    /// `task_finished` event: each at most `tailLineLimit` characters, since
    /// one long line (minified output, binary noise) would repeat up to the
    /// tail's 64 KiB, escaped four times over, in the console. The log keeps it whole.
    func logTail(of index: Int, lines: Int = 10) -> [String] {
        record.logTail(index: index, name: nodes[index].name, lines: lines).map(Self.shortenedTailLine)
    }

    static let tailLineLimit = 500

    static func shortenedTailLine(_ line: String) -> String {
        guard line.utf8.count > tailLineLimit else { return line }
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: line.unicodeScalars.prefix(tailLineLimit))
        let shown = String(kept)
        let rest = line.utf8.count - shown.utf8.count
        return rest == 0 ? line : shown + " … (\(rest) more bytes; the whole line is in the log)"
    }
}

extension Duration {
    /// `duration × factor`, saturating at `limit` (and at zero below): the
    /// product is formed in floating point, where it may be huge or infinite
    /// (`backoff: 1000` to the 10,000th power), and only a bounded value is
    /// turned back into an integer.
    static func product(_ duration: Duration, _ factor: Double, atMost limit: Duration) -> Duration {
        // No delay stays no delay, however large the factor (0 × ∞ is NaN).
        guard duration > .zero else { return .zero }
        let milliseconds = (duration.seconds * factor * 1000).rounded()
        guard milliseconds.isFinite, milliseconds < limit.seconds * 1000 else { return limit }
        guard milliseconds > 0 else { return .zero }
        return .milliseconds(Int64(milliseconds))
    }
}
