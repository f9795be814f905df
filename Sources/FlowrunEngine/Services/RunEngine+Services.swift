import Dispatch
import Glibc
import FlowrunRecord
import FlowrunModel
import FlowrunValues
import FlowrunEvents

/// A service's life in a run (SPEC §14): started as a task; settled
/// `succeeded` for its dependents, group and joins when its probe first
/// passes, while its process keeps running; stopped TERM → `kill_grace` →
/// KILL when everything else, `finally` included, has settled. One that
/// ends on its own after it was ready fails, and its running dependents
/// are cancelled.
final class ServiceRun {
    /// The attempt this is about (a retry before readiness makes another).
    let attempt: Int
    let name: String
    var probe: ServiceProbe?
    /// Set for a `line` probe: the pump's reader feeds it.
    var lineCheck: LineReadinessCheck?
    var ready = false
    /// flowrun is stopping it (the run's end, a second signal): its end is a success.
    var stopping = false
    /// When it became ready, seconds since the run started.
    var readyAt: Double?
    /// The CPUs and memory it declared, held from readiness until it ends:
    /// it gave back its slots, but it still uses what it declared.
    var heldResources: SlotPool.Demand?

    init(attempt: Int, name: String) {
        self.attempt = attempt
        self.name = name
    }
}

extension RunEngine {
    func isService(_ index: Int) -> Bool {
        nodes[index].definition?.value.isService ?? false
    }

    /// What a service's probe checks, with its values filled in (`tcp 127.0.0.1:8765`), `none` without a probe.
    func probeSummary(_ index: Int) -> String {
        guard let probe = nodes[index].definition?.value.ready else { return "none" }
        func filled(_ template: Template) -> String { (try? renderText(template, for: index)) ?? template.source }
        switch probe.check {
        case .tcp(let address): return "tcp " + filled(address)
        case .http(let url, let status): return "http \(filled(url)) → \(status)"
        case .line, .run: return probe.summary
        }
    }

    /// The local host and port a service's `tcp` or `http` probe connects
    /// to, filled in; nil for other probes, a task, or a value that cannot be filled in yet.
    func probeEndpoint(_ index: Int) -> (host: String, port: Int)? {
        guard isService(index), let check = nodes[index].definition?.value.ready?.check else { return nil }
        switch check {
        case .tcp(let address): return (try? renderText(address, for: index)).flatMap(ReadyProbe.hostAndPort)
        case .http(let url, _): return (try? renderText(url, for: index)).flatMap(LocalListeners.endpoint(ofURL:))
        case .line, .run: return nil
        }
    }

    /// Why a service may not start: its probe's port on this machine is
    /// listened on already, by another user's server or one left running,
    /// which the probe would take for the service's (SPEC §14).
    func probePortInUse(_ index: Int) -> String? {
        guard let (host, port) = probeEndpoint(index) else { return nil }
        return LocalListeners.inUseBeforeStart(host: host, port: port)
    }

    /// Before the attempt is made: what its output reader needs (a `line` probe).
    func prepareService(_ index: Int) {
        let service = ServiceRun(attempt: nodes[index].attempt, name: nodes[index].name)
        if case .line(let pattern)? = nodes[index].definition?.value.ready?.check {
            service.lineCheck = LineReadinessCheck(pattern: pattern)
        }
        services[index] = service
    }

    func lineCheck(for index: Int) -> LineReadinessCheck? {
        services[index]?.lineCheck
    }

    /// After the attempt started: its probe's first try, or ready at once when it has none.
    func startServiceProbe(_ index: Int) {
        guard let service = services[index], let task = nodes[index].definition else { return }
        let attempt = service.attempt
        guard let probe = task.value.ready else {
            queue.async { [weak self] in self?.serviceReady(index, attempt: attempt) }
            return
        }
        let check: any ReadinessCheck
        do throws(TemplateRenderError) {
            check = try readinessCheck(probe, for: index, service: service)
        } catch {
            attempts[index]?.cancel(as: .failed, reason: "ready: \(error.description)", through: teardown)
            return
        }
        service.probe = ServiceProbe(
            check: check, interval: probe.interval, timeout: probe.timeout, queue: queue,
            onReady: { [weak self] in self?.serviceReady(index, attempt: attempt) },
            onTimeout: { [weak self] reason in
                guard let self, self.services[index]?.attempt == attempt else { return }
                self.attempts[index]?.cancel(as: .failed, reason: reason, through: self.teardown)
            })
        service.probe?.start()
    }

    private func readinessCheck(_ probe: ReadyProbe, for index: Int, service: ServiceRun) throws(TemplateRenderError) -> any ReadinessCheck {
        switch probe.check {
        case .tcp(let address):
            let text = try renderText(address, for: index)
            guard let (host, port) = ReadyProbe.hostAndPort(text) else {
                throw TemplateRenderError(location: address.location, message: "ready.tcp must be HOST:PORT, found '\(text)'")
            }
            return TCPReadinessCheck(host: host, port: port, checksOwner: true)
        case .http(let url, let status):
            let filled = try renderText(url, for: index)
            return HTTPReadinessCheck(url: filled, status: status, connectTimeout: max(probe.interval, .seconds(1)), queue: queue,
                                      endpoint: LocalListeners.endpoint(ofURL: filled))
        case .line:
            return service.lineCheck ?? LineReadinessCheck(pattern: "")
        case .run(let command):
            return CommandReadinessCheck(command: command.source, teardown: teardown) { [unowned self] completion in
                // Known to the engine while it runs: its shell is not a leftover of another task's tree.
                var key: ObjectIdentifier?
                let attempt = makeProcessAttempt(for: index, script: command, logName: nodes[index].name + ".ready") { [weak self] result in
                    if let key { self?.probeProcesses[key] = nil }
                    completion(result)
                }
                key = ObjectIdentifier(attempt)
                probeProcesses[ObjectIdentifier(attempt)] = attempt
                attempt.start()
                return attempt
            }
        }
    }

    /// A `line` probe's match, from the loop's thread: try now, not at the next tick.
    func serviceLineMatched(_ index: Int, attempt: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let service = services[index], service.attempt == attempt else { return }
        service.probe?.tick()
    }

    /// The probe passed: the service counts as done for whatever waits on it.
    func serviceReady(_ index: Int, attempt: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard nodes.contains(index), let service = services[index], service.attempt == attempt, !service.ready,
              nodes[index].status == .running, attempts[index] != nil else { return }
        service.ready = true
        service.readyAt = elapsed
        service.probe = nil
        // Its deadline was for getting ready; its slots are for starting: it holds neither while it
        // serves. Its CPUs and memory (SPEC §13) it keeps until it ends.
        cancelTimer(.timeout(index))
        service.heldResources = releaseSlotsKeepingResources(index)
        settle(index, .succeeded)
        admitWaiters()
    }

    /// Gives back what `index` holds of the pool but its declared CPUs and
    /// memory, and returns those (nil when it declared none).
    private func releaseSlotsKeepingResources(_ index: Int) -> SlotPool.Demand? {
        guard nodes[index].holdsSlots, let demand = nodes[index].demand else { return nil }
        var kept: [Int: Int] = [:], given: [Int: Int] = [:]
        for (resource, amount) in demand.pairs {
            if resource == Self.cpuResource || resource == Self.memoryResource { kept[resource] = amount } else { given[resource] = amount }
        }
        nodes[index].holdsSlots = false
        pool.release(SlotPool.Demand(amounts: given))
        return kept.isEmpty ? nil : SlotPool.Demand(amounts: kept)
    }

    /// Whether `index` is a ready service still running: its settling says `task_ready`, not `task_finished`.
    func isServing(_ index: Int) -> Bool {
        services[index]?.ready == true && attempts[index] != nil
    }

    /// The `task_ready` event of a service that just settled as ready.
    func emitReady(_ index: Int) {
        let started = nodes[index].startedAt ?? elapsed
        emit(event(.taskReady(.init(task: nodes[index].name, after: elapsed - started, probe: probeSummary(index)))))
    }

    /// An attempt of a service ended before it was ready: the result as a task's, said as a service's.
    func serviceEndedBeforeReady(_ index: Int, _ result: inout AttemptResult) {
        services[index]?.probe?.cancel()
        services[index] = nil
        switch result.status {
        case .succeeded:
            result.status = .failed
            result.reason = "the service exited before it was ready (exit 0)"
        case .failed where result.reason?.hasPrefix("exit ") == true || result.reason?.hasPrefix("killed by") == true:
            result.reason = "the service exited before it was ready (\(result.reason ?? ""))"
        default:
            break
        }
    }

    /// A ready service's process ended: stopped by flowrun (a success), or on its own (a failure).
    func serviceEnded(_ index: Int, _ result: AttemptResult) {
        guard let service = services.removeValue(forKey: index) else { return }
        attempts[index] = nil
        if let held = service.heldResources {
            pool.release(held)
            admitWaiters()
        }
        retryDescriptorWaiters()
        let exists = nodes.contains(index)
        if exists, result.wroteLog { nodes[index].hasLog = true }
        let duration = service.readyAt.map { _ in exists ? nodes[index].startedAt.map { elapsed - $0 } : nil } ?? nil
        var finished = RunEvent.TaskFinished(
            task: service.name, status: service.stopping ? .succeeded : .failed, attempt: service.attempt,
            exitCode: result.exitCode, signal: result.signal, duration: duration,
            reason: service.stopping ? "service stopped by flowrun" : "the service exited on its own (\(result.exitCode.map { "exit \($0)" } ?? "signal"))")
        if exists, nodes[index].hasLog {
            finished.log = RunEvent.LogPath(path: record.logPath(index: index, name: service.name), offsetInRecord: record.directory.utf8.count + 1)
            if !service.stopping { finished.logTail = logTail(of: index) }
        }
        if watchState?.idle == true {
            // Between two runs of `watch`: the last run's record is closed; the next one starts it again.
            if !service.stopping { _ = writeAll(STDERR_FILENO, "flowrun watch: service \(service.name) exited on its own (\(result.exitCode.map { "exit \($0)" } ?? "signal")); it starts again at the next change of its sources\n") }
        } else {
            emit(event(.taskFinished(finished)))
        }
        if exists { nodes[index].stash.duration = duration }
        if !service.stopping, exists {
            nodes[index].status = .failed
            nodes[index].stash.exitCode = result.exitCode
            if nodes[index].index != nil, nodes[index].group.map({ fanOutProgress[$0] != nil }) == true {
                settledMemberCounts[.succeeded, default: 1] -= 1
                settledMemberCounts[.failed, default: 0] += 1
                settledMemberFailed = true
            }
            // Its dependents lost what they need: those running or waiting for slots are
            // cancelled; those not yet started see a failed need and are skipped.
            for dependent in nodes[index].dependents where nodes.contains(dependent) {
                let status = nodes[dependent].status
                if status == .running || status == .waiting { cancel(dependent, reason: .serviceExited) }
            }
            if plan.workflow.failFast && !(nodes[index].definition?.value.continueOnError ?? false) { stop(because: .failFast) }
        }
        if exists { retireMember(index) }
        serviceStoppedForWatch(index)
        finishIfDone()
    }

    /// Everything else has settled: each running service is stopped (TERM, `kill_grace`, KILL of its tree).
    /// True while any is still running.
    func stopServices() -> Bool {
        for (index, service) in services where !service.stopping {
            service.stopping = true
            service.probe?.cancel()
            attempts[index]?.cancel(as: .succeeded, reason: "service stopped by flowrun", through: teardown)
        }
        return !services.isEmpty
    }
}
