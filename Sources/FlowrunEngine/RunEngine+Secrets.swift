import FlowrunValues
import FlowrunEvents

/// Where the engine hides secrets (SPEC §11): one choke point per kind of
/// output. Events are masked once, in `emit`, before any reporter (the run
/// record's `events.jsonl`, the console in every mode, join blocks) sees
/// them; the summary's pieces are masked as they are written; task output
/// is masked as it streams to the log and to `--stream` (`ProcessAttempt`,
/// `HTTPAttempt`). What tasks receive and what expressions read keep the
/// real values.
extension RunEngine {
    var secretMasker: SecretMasker? { plan.secretMasker }

    /// `event` as it may be shown.
    func shown(_ event: RunEvent) -> RunEvent {
        guard let secretMasker else { return event }
        return event.masked(by: secretMasker)
    }

    /// A piece of `summary.json` as it may be stored.
    func shown(json: [UInt8]) -> [UInt8] {
        secretMasker?.maskJSON(json) ?? json
    }
}

extension RunEvent {
    /// Every text that can carry a value (reasons, log tails, join reports,
    /// what a task waits on) masked. Names (`subject`, `missing`) are kept:
    /// they come from the workflow file, and the reporters key on them.
    func masked(by masker: SecretMasker) -> RunEvent {
        var event = self
        switch payload {
        case .runStarted(var started):
            started.workflow = masker.mask(started.workflow)
            started.path = masker.mask(started.path)
            event.payload = .runStarted(started)
        case .taskWaiting(var waiting):
            waiting.waitingOn = masker.mask(waiting.waitingOn)
            event.payload = .taskWaiting(waiting)
        case .taskStarted(var started):
            if let log = started.log { started.log?.path = masker.mask(log.path) }
            started.probe = started.probe.map(masker.mask)
            event.payload = .taskStarted(started)
        case .taskReady(var ready):
            ready.probe = ready.probe.map(masker.mask)
            event.payload = .taskReady(ready)
        case .taskSlurm:
            break  // job ids, states and node names: no value of the workflow's
        case .taskRetrying(var retrying):
            retrying.reason = retrying.reason.map(masker.mask)
            event.payload = .taskRetrying(retrying)
        case .taskFinished(var finished):
            finished.reason = finished.reason.map(masker.mask)
            finished.logTail = finished.logTail.map(masker.mask)
            if let log = finished.log { finished.log?.path = masker.mask(log.path) }
            event.payload = .taskFinished(finished)
        case .groupFinished(var group):
            group.reason = group.reason.map(masker.mask)
            event.payload = .groupFinished(group)
        case .joinCompleted(var join):
            join.report = join.report.map { (key: $0.key, value: masker.mask($0.value)) }
            join.joinReport = join.joinReport.map { $0.masked(by: masker) }
            event.payload = .joinCompleted(join)
        case .runFinished(var finished):
            finished.path = masker.mask(finished.path)
            event.payload = .runFinished(finished)
        case .taskProgress, .taskOutput:
            break  // a number; output is masked as it streams
        }
        return event
    }
}

extension JoinReport {
    /// Every member's values and item masked (names are the workflow's).
    func masked(by masker: SecretMasker) -> JoinReport {
        var report = self
        for index in report.members.indices {
            report.members[index].item = report.members[index].item.map(masker.mask)
            for value in report.members[index].values.indices {
                report.members[index].values[value].text = masker.mask(report.members[index].values[value].text)
            }
        }
        return report
    }
}
