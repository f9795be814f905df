import FlowrunEvents

/// Stopping early: fail fast, the run's deadline, signals; and `finally`.
extension RunEngine {
    /// Cancels one node: a task that has not started is settled `cancelled`,
    /// a running one is stopped (SIGTERM to its tree, SIGKILL after the grace)
    /// and settles when its tree is gone; a group or join cancels its members.
    func cancel(_ index: Int, reason: CancelReason) {
        guard !nodes[index].status.isFinal else { return }
        switch nodes[index].kind {
        case .task:
            nodes[index].cancelReason = reason
            if nodes[index].status == .running, let attempt = attempts[index] {
                attempt.cancel(as: .cancelled, reason: reason.rawValue, through: teardown)
            } else {
                settle(index, .cancelled, reason: reason)
            }
        case .group:
            let members = members(of: index)
            if nodes[index].status == .pending {
                settle(index, .cancelled, reason: reason)
            }
            if let progress = fanOutProgress[index], progress.drainReason == nil { progress.drainReason = reason }
            for member in members { cancel(member, reason: reason) }
            // Members not made yet are made cancelled.
            refillFanOut(index)
        case .join:
            // The join itself is cancelled first (an outer join's quorum no longer needs it):
            // left pending, it counted its members' cancellations as failures, and failed the run.
            settle(index, .cancelled, reason: reason)
            for member in nodes[index].members { cancel(member, reason: reason) }
        }
    }

    /// Stops the main phase: nothing new starts, running tasks are stopped,
    /// then `finally` runs.
    func stop(because reason: CancelReason) {
        // Between two runs of `flowrun watch`: only its services are left to stop.
        if let watch = watchState, watch.idle {
            stopping = stopping ?? reason
            _ = stopServices()
            finishIfDone()
            return
        }
        // Once stopping, or once finally has begun, there is nothing more to stop.
        guard scheduler.beginStopping(reason) else { return }
        for index in nodes.indices where !nodes[index].isFinally && nodes[index].kind == .task && !nodes[index].status.isFinal {
            cancel(index, reason: reason)
        }
        for index in nodes.liveMembers where nodes.contains(index) && !nodes[index].status.isFinal {
            cancel(index, reason: reason)
        }
        for index in nodes.indices where !nodes[index].isFinally && nodes[index].kind == .group && nodes[index].status == .pending {
            cancel(index, reason: reason)
        }
        // Fan-outs' members not made yet are made cancelled.
        for group in fanOutProgress.keys { refillFanOut(group) }
        finishIfDone()
    }

    /// How a running attempt is stopped early (a timeout, a cancel,
    /// `fail_fast`, a quorum, a service's end): SIGTERM, `kill_grace`, SIGKILL.
    /// A second signal stops everything through `TeardownStep.immediate` instead.
    var teardown: [TeardownStep] { TeardownStep.graceful(plan.workflow.killGrace) }

    /// A second signal: kill every process now, `finally` included.
    func killEverything() {
        killingEverything = true
        if stopping == nil { stopping = .signal }
        for index in Array(nodes.indices) + nodes.liveMembers where nodes.contains(index) && !nodes[index].status.isFinal && nodes[index].kind == .task {
            nodes[index].cancelReason = .signal
            if let attempt = attempts[index] {
                attempt.cancel(as: .cancelled, reason: "killed", through: TeardownStep.immediate)
            } else {
                settle(index, .cancelled, reason: .signal)
            }
        }
        for (index, service) in services where service.ready {
            service.stopping = true
            attempts[index]?.cancel(as: .cancelled, reason: "killed", through: TeardownStep.immediate)
        }
        for group in fanOutProgress.keys { refillFanOut(group) }
        finishIfDone()
    }

    func startFinally() {
        cancelTimer(.run)
        for index in scheduler.beginFinally() { needsSettled(index) }
    }
}
