#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues
import FlowrunEvents

/// A run whose engine was killed (`kill -9`, the OOM killer) has no
/// summary.json: what `resume` needs comes from its events.jsonl instead,
/// which the supervisor ended with a `run_killed` line (docs/events-json.md)
/// holding where the run ran, from which file, and one hash of every task's
/// identity. Each task's status is in the events; its stash (stdout,
/// outputs) and own identity are not, so `ResumeSelection` restores only
/// tasks that nothing which runs again depends on.
extension ResumeSource {
    /// Nil when the events hold no `run_killed` line with those facts (the
    /// machine went down, or both of flowrun's processes were killed).
    /// `folder` is the run folder's held handle (read with `O_NOFOLLOW`).
    static func readKilledRun(folder: Int32, directory: String) -> ResumeSource? {
        guard let bytes = RecordFile.read(folder, "events.jsonl", limit: nil) else { return nil }
        guard let killed = lastKilledLine(bytes), let file = killed["file"]?.string,
              let planIdentity = killed["plan_identity"]?.string else { return nil }
        let runID = String(directory.split(separator: "/").last ?? "")
        var run = RecordedRun(id: runID, folder: directory, state: .interrupted)
        run.readEvents(bytes)
        var source = ResumeSource(
            runID: runID, directory: directory, workflow: run.workflow ?? "", file: file,
            workflowPath: killed["workflow_path"]?.string, cwd: killed["cwd"]?.string,
            exitCode: killed["exit_code"]?.int ?? 137, only: (killed["only"]?.array ?? []).compactMap(\.string),
            tasks: [], groupStatus: [:], joinStatus: [:])
        source.planIdentity = planIdentity
        for task in run.tasks {
            var entry = Task(
                name: task.name, status: task.status.rawValue, phase: "main", group: nil, item: nil, stdout: "",
                exitCode: task.exitCode, duration: task.duration, outputs: [], identity: nil, identityParts: [], wholeStdout: nil)
            if !task.status.isFinal, let ended = slurmJobEnd(of: task, in: folder) {
                // A Slurm job that ended while no engine watched it: its exit file says how.
                entry.status = ended.code == 0 ? "succeeded" : "failed"
                entry.exitCode = ended.code
                entry.stdout = ended.stdout
            }
            source.tasks.append(entry)
        }
        for group in run.groups { source.groupStatus[group.name] = group.status.rawValue }
        for join in run.joins { source.joinStatus[join.name] = join.status.rawValue }
        return source
    }

    /// A task on Slurm whose job wrote its exit file (`slurm/STEM.N.exit`
    /// in the run folder: Slurm's default shared folder) after the engine
    /// was killed: its exit code and stdout (the last 1 MiB, trailing newline removed).
    private static func slurmJobEnd(of task: RecordedRun.Task, in folder: Int32) -> (code: Int, stdout: String)? {
        let stem = task.recordName ?? task.logFile.flatMap { $0.hasSuffix(".log") ? String($0.dropLast(4)) : nil }
        guard let stem, task.attempts > 0 else { return nil }
        let base = "slurm/\(stem).\(task.attempts)"
        guard let bytes = RecordFile.read(folder, base + ".exit", limit: 32),
              let code = Int(String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }) else { return nil }
        var stdout = String(decoding: RecordFile.read(folder, base + ".out", limit: 1 << 20) ?? [], as: UTF8.self)
        if stdout.hasSuffix("\n") { stdout.removeLast() }
        return (code, stdout)
    }

    /// The last line, parsed, if it is `run_killed` (the supervisor appends
    /// it once the engine is dead: nothing writes after it).
    private static func lastKilledLine(_ bytes: [UInt8]) -> JSONValue? {
        var end = bytes.endIndex
        while end > bytes.startIndex, bytes[end - 1] == UInt8(ascii: "\n") { end -= 1 }
        let start = bytes[..<end].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? bytes.startIndex
        guard let event = JSONValue.parse(bytes: Array(bytes[start..<end])), event["event"]?.string == "run_killed" else { return nil }
        return event
    }
}
