import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FlowrunEvents
import FlowrunModel
import FlowrunRecord
import FlowrunValues

/// `run:` on Slurm: one attempt as one job (or one element of a job array)
/// that the run's `SlurmSession` submits, watches and cancels.
///
/// The job writes the task's stdout and stderr to files in the shared
/// folder; each poll hands what is new to the attempt's `AttemptOutput`
/// (the task's log in the record, the stash's capture, progress), so
/// `flowrun logs`, `::progress::` and the console's failure tail work as
/// for a local task. The job's exit file,
/// written last, decides the result; Slurm's state only when it is absent.
final class SlurmAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: every mutable field is the engine queue's; `start`,
    // `cancel` and the session's calls (all made there) check it with
    // `dispatchPrecondition`. `output` is Sendable (its own `Mutex`).
    let queue: DispatchQueue
    private unowned let session: SlurmSession
    let spec: SlurmTaskSpec
    /// The task's name, for messages and the live view.
    let task: String
    /// Members of one fan-out share a key: submitted together as one array.
    let batchKey: Int?
    /// `SlurmArguments.of` for this task: the same for every member of a fan-out.
    let sbatchArguments: [String]
    /// `%C` of the array, from the group's concurrency.
    let concurrency: Int?
    private let output: AttemptOutput
    private let completion: (AttemptResult) -> Void
    /// Told of `queued (slurm job N)` and `running on NODE`.
    private let onState: (SlurmAttempt, SlurmJobState) -> Void

    /// `1234` or `1234_5`, once submitted.
    var jobID: String?
    /// Slurm's own output for the job (`slurm-JOB.out`): its messages when it ends a job.
    var slurmOutput: String?
    /// The last state a poll saw.
    var lastState: SlurmJobState?
    /// Polls that found the job gone from `squeue` with no exit file yet.
    var pollsWithoutExit = 0
    private(set) var stoppedAs: (status: TaskStatus, reason: String)?
    /// The last teardown asked for (the session's): a job submitted after it is cancelled so.
    var teardown: [TeardownStep]?
    private(set) var isDone = false
    private var stdoutRead = 0
    private var stderrRead = 0

    init(spec: SlurmTaskSpec, task: String, batchKey: Int?, sbatchArguments: [String], concurrency: Int?, output: AttemptOutput,
         session: SlurmSession, queue: DispatchQueue,
         onState: @escaping (SlurmAttempt, SlurmJobState) -> Void, completion: @escaping (AttemptResult) -> Void) {
        self.spec = spec
        self.task = task
        self.batchKey = batchKey
        self.sbatchArguments = sbatchArguments
        self.concurrency = concurrency
        self.output = output
        self.session = session
        self.queue = queue
        self.onState = onState
        self.completion = completion
    }

    func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        session.submit(self)
    }

    /// The steps become `scancel`s (`SlurmSession.cancel`): a signal step
    /// `scancel --signal=NAME`, then, after its grace, the next; `.kill` a
    /// plain `scancel`. A second cancel that does not begin with `.kill`
    /// joins the first.
    func cancel(as status: TaskStatus, reason: String, through steps: [TeardownStep]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isDone else { return }
        let first = stoppedAs == nil
        if first { stoppedAs = (status, reason) }
        guard first || steps.first == .kill else { return }
        session.cancel(self, through: steps)
    }

    /// A poll saw the job in `state`.
    func saw(_ state: SlurmJobState) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard state != lastState else { return }
        lastState = state
        onState(self, state)
    }

    /// Copies what the job printed since the last call into the log and the capture.
    func readNewOutput() {
        dispatchPrecondition(condition: .onQueue(queue))
        copyNew(from: spec.files.stdout, offset: &stdoutRead, isStdout: true)
        copyNew(from: spec.files.stderr, offset: &stderrRead, isStdout: false)
        // Until the next poll: no descriptor held per job waiting in the queue.
        output.log.releaseDescriptor()
    }

    private func copyNew(from path: String, offset: inout Int, isStdout: Bool) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            guard count > 0 else { return }
            offset += count
            buffer.withUnsafeBytes { bytes in
                let chunk = UnsafeRawBufferPointer(rebasing: bytes[0..<count])
                output.write(chunk, isStdout ? .stdout : .stderr)
            }
        }
    }

    /// The exit status the job wrote, if it has.
    func exitStatus() -> Int? {
        let descriptor = open(spec.files.exit, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return Int(String(decoding: bytes.prefix(count), as: UTF8.self).trimmingNewlines)
    }

    /// Ends the attempt: from the exit file's status, or (absent) from
    /// Slurm's final state, or a reason flowrun gives (a failed `sbatch`).
    func finish(exitStatus: Int?, state: SlurmJobState?, problem: String? = nil) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isDone else { return }
        isDone = true
        readNewOutput()
        var result: AttemptResult
        if let exitStatus, exitStatus > 128, let slurmReason = state?.reason {
            // Killed by a signal that Slurm sent: its reason (NODE_FAIL, TIMEOUT, OUT_OF_MEMORY) says more than "exit 143".
            result = AttemptResult(status: state?.state == "TIMEOUT" ? .timedOut : .failed, exitCode: exitStatus, reason: slurmReason)
            if stoppedAs == nil { output.note("flowrun: \(slurmReason)\(jobID.map { " (job \($0))" } ?? "")\n") }
        } else if let exitStatus {
            result = AttemptResult(status: exitStatus == 0 ? .succeeded : .failed, exitCode: exitStatus, reason: exitStatus == 0 ? nil : "exit \(exitStatus)")
        } else if let problem {
            output.note("flowrun: \(problem)\n")
            result = AttemptResult(status: .failed, reason: problem)
        } else {
            let reason = state?.reason ?? "slurm: the job ended without an exit status (\(state?.state ?? "not in squeue"))"
            result = AttemptResult(status: state?.state == "TIMEOUT" ? .timedOut : .failed, reason: reason)
            // A job flowrun stopped itself ends without one: that needs no line.
            if stoppedAs == nil { output.note("flowrun: \(reason)\(jobID.map { " (job \($0))" } ?? "")\n") }
        }
        if state?.state == "OUT_OF_MEMORY", stoppedAs == nil {
            // The same reason a local attempt over its cgroup's limit gets (SPEC §13).
            result.status = .failed
            result.reason = OutOfMemory.reason(limitBytes: spec.memoryLimit)
            result.outOfMemory = true
        }
        if let stoppedAs {
            result.status = stoppedAs.status
            result.reason = stoppedAs.reason
        }
        output.end(.stdout)
        output.end(.stderr)
        result.outputs = readOutputs()
        result.take(output.close())
        // On a later turn: the progress the last read found reaches the engine first, as a local task's does.
        queue.async { [self, result] in completion(result) }
    }

    /// `$FLOWRUN_OUTPUT`, parsed; problems go to the log.
    private func readOutputs() -> [(key: String, value: String)] {
        let descriptor = open(spec.files.output, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var info = stat()
        fstat(descriptor, &info)
        guard info.st_mode & S_IFMT == S_IFREG else { return [] }
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: min(size, OutputFileParser.sizeLimit + 1))
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        let parsed = OutputFileParser.parse(Array(bytes.prefix(max(0, count))), fileSize: size)
        for problem in parsed.problems { output.note("flowrun: $FLOWRUN_OUTPUT \(problem)\n") }
        return parsed.pairs
    }
}

extension String {
    fileprivate var trimmingNewlines: String {
        var text = Substring(self)
        while let last = text.last, last == "\n" || last == " " || last == "\r" { text.removeLast() }
        return String(text)
    }
}
