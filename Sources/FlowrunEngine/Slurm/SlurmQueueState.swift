/// A job's state as `squeue` (or `sacct`) reports it.
struct SlurmJobState: Equatable, Sendable {
    /// PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, …
    var state: String
    /// The node it runs on, once running.
    var node: String?

    /// Slurm is done with it: the exit file (or this state) decides.
    var isFinal: Bool {
        !["PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT"].contains(state)
    }

    /// The reason a job gets when Slurm, not the task, ended it.
    var reason: String? {
        switch state {
        case "OUT_OF_MEMORY", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "CANCELLED", "BOOT_FAIL", "DEADLINE":
            return "slurm: \(state)"
        default:
            return nil
        }
    }
}

/// Reading `squeue --noheader --array --states=all --format=%i|%T|%N` and
/// `sacct --noheader --parsable2 --format=JobID,State` (pure: `SlurmQueueStateTests`).
enum SlurmQueueState {
    /// `1234_5|RUNNING|node1` per line, by job id (`1234` or `1234_5`).
    static func parseSqueue(_ text: String) -> [String: SlurmJobState] {
        var states: [String: SlurmJobState] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: " ") }
            guard fields.count >= 2, !fields[0].isEmpty else { continue }
            let node = fields.count > 2 && !fields[2].isEmpty && fields[2] != "(null)" ? fields[2] : nil
            states[fields[0]] = SlurmJobState(state: fields[1], node: node)
        }
        return states
    }

    /// `1234_5|CANCELLED by 0` per line; steps (`1234.batch`) left out.
    static func parseSacct(_ text: String) -> [String: SlurmJobState] {
        var states: [String: SlurmJobState] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "|", omittingEmptySubsequences: false)
            guard fields.count >= 2, !fields[0].contains(".") else { continue }
            let state = fields[1].split(separator: " ").first.map(String.init) ?? ""
            states[String(fields[0])] = SlurmJobState(state: state, node: nil)
        }
        return states
    }

    /// What Slurm wrote into a job's own output when it ended it
    /// (`*** JOB 12 ON n1 CANCELLED AT … DUE TO TIME LIMIT ***`): the state,
    /// for when accounting is off and the job has left `squeue`.
    static func stateFromJobOutput(_ text: String) -> String? {
        if text.contains("DUE TO TIME LIMIT") { return "TIMEOUT" }
        if text.contains("DUE TO NODE FAILURE") { return "NODE_FAIL" }
        if text.contains("DUE TO PREEMPTION") { return "PREEMPTED" }
        if text.contains("oom-kill") || text.contains("Out Of Memory") { return "OUT_OF_MEMORY" }
        if text.contains("CANCELLED AT") { return "CANCELLED" }
        return nil
    }

    /// Whether a failed command's message says the controller was busy or
    /// out of reach (retried), not that the request was wrong.
    static func isTransient(_ message: String) -> Bool {
        let lowered = message.lowercased()
        return ["socket timed out", "unable to contact slurm controller", "temporarily unable", "try again",
                "connection refused", "communication connection failure", "resource temporarily unavailable",
                "slurm_persist_conn", "zero bytes were transmitted"].contains { lowered.contains($0) }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text.removeFirst() }
        while text.last == set { text.removeLast() }
        return String(text)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String { String(self).trimmingCharacters(in: set) }
}
