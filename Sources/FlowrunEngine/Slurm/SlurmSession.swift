import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FlowrunEvents
import FlowrunModel

/// The run's link to Slurm: one object per run, owned by the engine's
/// queue (`dispatchPrecondition` at every entry).
///
/// - Submission: attempts that start in one turn of the queue are
///   collected and submitted when it ends: each task alone with one
///   `sbatch --parsable`, the ready members of one fan-out together as one
///   job array (`--array=0-N%C`), whose elements find their script through
///   `SLURM_ARRAY_TASK_ID`.
/// - Polling: one `squeue` for all of the run's jobs (by the run's job
///   name), every second while something changes, backing off to every 10 s
///   while nothing does; a timer on the queue, no thread per job.
/// - Cancelling: each attempt's teardown steps (`TeardownStep`), batched
///   per turn of the queue: a signal step is `scancel --full --signal=NAME`,
///   the next step follows its grace for what is still there; `.kill` is
///   `scancel --full --signal=QUIT` for the jobs seen started (their job
///   script SIGKILLs the task's process group), then a plain `scancel` (by
///   the run's job name when it takes every job).
/// - Transient failures of `sbatch`/`squeue` are retried with backoff.
final class SlurmSession: @unchecked Sendable {
    // @unchecked: all state belongs to `queue`; commands' completions and
    // timers are delivered there (checked in each).
    private let queue: DispatchQueue
    private let reaper: ChildReaper
    private let tools: SlurmTools
    /// `KEY=VALUE`: flowrun's environment, which sbatch passes on to the job.
    private let environment: [String]
    let runID: String
    /// `DIR/slurm`: scripts, logs and exit files, on the shared folder.
    let folder: String
    /// Every job of the run is named this (`flowrun-RUNID`): one `squeue`
    /// and the supervisor's `scancel` find them all by it.
    let jobName: String

    private var pending: [SlurmAttempt] = []
    private var flushScheduled = false
    /// Submitted, not finished, by job id.
    private var active: [String: SlurmAttempt] = [:]
    /// Being submitted (no id yet): cancelled ones are scancelled once the id comes.
    private var submitting = 0
    /// The `sbatch` of each batch being submitted, and its attempts: one
    /// that does not answer is stopped once all of them are (Ctrl-C).
    private var sbatches: [Int: (running: SlurmCommand.Running, attempts: [SlurmAttempt], script: String)] = [:]
    private var batchSerial = 0

    /// Jobs to signal in this turn's `scancel`s, by step and what follows it.
    private var toSignal: [Signalling: Set<String>] = [:]
    private var toKill: Set<String> = []
    private var cancelScheduled = false

    private var pollTimer: (any DispatchSourceTimer)?
    private var pollInFlight = false
    private var pollInterval = 1.0
    private var lastPollAt = 0.0
    /// Jobs gone from squeue with no exit file, waiting for one `sacct`.
    private var sacctInFlight = false

    /// Counts for tests and benchmarks (also in the record's events).
    private(set) var sbatchCalls = 0
    private(set) var squeueCalls = 0

    init(queue: DispatchQueue, reaper: ChildReaper, tools: SlurmTools, environment: [String], runID: String, folder: String) {
        self.queue = queue
        self.reaper = reaper
        self.tools = tools
        self.environment = environment
        self.runID = runID
        self.folder = folder
        self.jobName = "flowrun-\(runID)"
    }

    /// What the supervisor runs if the engine dies: every job of the run
    /// cancelled, the started ones killed at once as a second Ctrl-C does
    /// (`killNow`; a plain `scancel` alone is TERM, and the task's grace).
    var cancelEverythingCommand: [String] {
        ["/bin/sh", "-c", #""$0" --full --signal=QUIT --state=RUNNING --name="$1"; exec "$0" --name="$1""#, tools.scancel, jobName]
    }

    // MARK: Submission

    func submit(_ attempt: SlurmAttempt) {
        dispatchPrecondition(condition: .onQueue(queue))
        pending.append(attempt)
        guard !flushScheduled else { return }
        flushScheduled = true
        // After this turn: every attempt the engine starts in it goes in the same batch.
        queue.async { [self] in flush() }
    }

    private func flush() {
        dispatchPrecondition(condition: .onQueue(queue))
        flushScheduled = false
        let ready = pending.filter { !$0.isDone }
        pending = []
        // One array per group and set of sbatch flags: a retry whose memory
        // retry_resources grew cannot share its siblings' `--mem`.
        struct ArrayKey: Hashable { let group: Int, arguments: [String] }
        var arrays: [ArrayKey: [SlurmAttempt]] = [:]
        var order: [ArrayKey] = []
        for attempt in ready {
            if let group = attempt.batchKey {
                let key = ArrayKey(group: group, arguments: attempt.sbatchArguments)
                if arrays[key] == nil { order.append(key) }
                arrays[key, default: []].append(attempt)
            } else {
                submitBatch([attempt], asArray: false, tries: 0)
            }
        }
        for key in order { submitBatch(arrays[key]!, asArray: arrays[key]!.count > 1, tries: 0) }
    }

    /// One `sbatch` for `attempts`: their element scripts and the job script
    /// in `slurm/sN/`, kept in the record.
    private func submitBatch(_ attempts: [SlurmAttempt], asArray: Bool, tries: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        // Stopped while waiting to be submitted again (a busy controller's backoff): never submitted.
        for attempt in attempts where !attempt.isDone && attempt.stoppedAs != nil {
            queue.async { attempt.finish(exitStatus: nil, state: nil, problem: "never submitted") }
        }
        let attempts = attempts.filter { !$0.isDone && $0.stoppedAs == nil }
        guard let first = attempts.first else { return }
        batchSerial += 1
        let serial = batchSerial
        let batch = "\(folder)/s\(batchSerial)"
        if let problem = writeScripts(attempts, in: batch) {
            for attempt in attempts { attempt.finish(exitStatus: nil, state: nil, problem: problem) }
            return
        }
        var arguments = [tools.sbatch, "--parsable", "--job-name=\(jobName)", "--no-requeue",
                         "--output=\(batch)/slurm-\(asArray ? "%A_%a" : "%j").out"]
        arguments += first.sbatchArguments
        if asArray { arguments.append(SlurmArguments.array(count: attempts.count, concurrency: first.concurrency)) }
        arguments.append("\(batch)/job.sh")
        submitting += 1
        sbatchCalls += 1
        let running = SlurmCommand.run(arguments, environment: environment, reaper: reaper, queue: queue) { [self] outcome in
            dispatchPrecondition(condition: .onQueue(queue))
            submitting -= 1
            sbatches[serial] = nil
            let id = outcome.output.split(separator: "\n").last.map { String($0.split(separator: ";").first ?? "") } ?? ""
            guard outcome.status == 0, !id.isEmpty, id.allSatisfy(\.isNumber) else {
                let message = outcome.output.split(separator: "\n").joined(separator: "; ")
                let stopped = attempts.allSatisfy { $0.stoppedAs != nil }
                if !stopped, !outcome.timedOut, SlurmQueueState.isTransient(message) || outcome.status == -1 && tries < 3, tries < 8 {
                    // The controller is busy or restarting: not the task's failure.
                    let delay = min(1.0 * Double(1 << tries), 10)
                    queue.asyncAfter(deadline: .now() + delay) { [self] in submitBatch(attempts, asArray: asArray, tries: tries + 1) }
                    return
                }
                if outcome.timedOut || attempts.contains(where: { $0.stoppedAs != nil }) {
                    // Killed (stopped meanwhile, or no answer): Slurm may have taken the job
                    // all the same. Only this batch's jobs are cancelled, found by their script.
                    scancelJobs(running: "\(batch)/job.sh")
                }
                for attempt in attempts { attempt.finish(exitStatus: nil, state: nil, problem: "sbatch failed (exit \(outcome.status)): \(message)") }
                return
            }
            for (position, attempt) in attempts.enumerated() {
                let jobID = asArray ? "\(id)_\(position)" : id
                attempt.jobID = jobID
                attempt.slurmOutput = "\(batch)/slurm-\(asArray ? "\(id)_\(position)" : id).out"
                active[jobID] = attempt
                attempt.saw(SlurmJobState(state: "PENDING", node: nil))
                // Stopped while sbatch ran.
                if let teardown = attempt.teardown { enqueue(jobID, teardown[...]) }
            }
            schedulePoll(after: 1)
        }
        if let running { sbatches[serial] = (running, attempts, "\(batch)/job.sh") }
    }

    /// Cancels the run's jobs whose script is `script` (one batch), found
    /// with one `squeue`: what an `sbatch` killed before it said the id may
    /// have submitted, without touching the run's other jobs.
    private func scancelJobs(running script: String, tries: Int = 0) {
        let arguments = [tools.squeue, "--noheader", "--name=\(jobName)", "--format=%F|%o"]
        SlurmCommand.run(arguments, environment: environment, reaper: reaper, queue: queue) { [self] outcome in
            guard outcome.status == 0 else {
                if tries < 5 { queue.asyncAfter(deadline: .now() + 1) { [self] in scancelJobs(running: script, tries: tries + 1) } }
                return
            }
            var ids: [String] = []
            for line in outcome.output.split(separator: "\n") {
                let fields = line.split(separator: "|", maxSplits: 1).map(String.init)
                if fields.count == 2, fields[1] == script, !ids.contains(fields[0]) { ids.append(fields[0]) }
            }
            if !ids.isEmpty { scancel(ids) }
        }
    }

    /// Element scripts `0.sh`, `1.sh`, … and `job.sh`; nil, or what went wrong.
    private func writeScripts(_ attempts: [SlurmAttempt], in batch: String) -> String? {
        guard mkdir(batch, 0o700) == 0 || errno == EEXIST else { return "cannot make \(batch): \(String(cString: strerror(errno)))" }
        for (position, attempt) in attempts.enumerated() {
            // A stem is one attempt's in one run, but `watch` runs again in the same
            // folder with attempt 1 again: the stop asked of the last run's job (its
            // sources changed) stopped this one before its task started, its exit file
            // would say how a job that leaves none ended, and its `$FLOWRUN_OUTPUT`
            // (appended to) gave this run the outputs the last one wrote.
            for leftover in [attempt.spec.files.stop, attempt.spec.files.exit, attempt.spec.files.output] where unlink(leftover) != 0 && errno != ENOENT {
                return "cannot remove \(leftover), left by an earlier run: \(String(cString: strerror(errno)))"
            }
            if let file = attempt.spec.scriptFile,
               let problem = Self.write(file.text, to: attempt.spec.files.script, mode: file.executable ? 0o700 : 0o600) { return problem }
            if let problem = Self.write(SlurmJobScript.element(attempt.spec), to: "\(batch)/\(position).sh") { return problem }
        }
        return Self.write(SlurmJobScript.job(runID: runID, batchFolder: batch, count: attempts.count), to: "\(batch)/job.sh", mode: 0o700)
    }

    static func write(_ text: String, to path: String, mode: mode_t = 0o600) -> String? {
        // O_NONBLOCK: a FIFO a task made at the path (its own `.stop`, a retry's script) blocked
        // this queue in open(2), and no Ctrl-C, first or second, ended the run. Only a regular file is written.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode)
        guard descriptor >= 0 else { return "cannot write \(path): \(String(cString: strerror(errno)))" }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return "cannot write \(path): not a regular file" }
        fchmod(descriptor, mode)
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return "cannot write \(path): \(String(cString: strerror(errno)))" }
            bytes = bytes.dropFirst(written)
        }
        return nil
    }

    // MARK: Cancelling

    /// Stops `attempt`'s job through `steps` (see `TeardownStep`).
    func cancel(_ attempt: SlurmAttempt, through steps: [TeardownStep]) {
        dispatchPrecondition(condition: .onQueue(queue))
        attempt.teardown = steps
        if let position = pending.firstIndex(where: { $0 === attempt }) {
            // Not submitted yet: nothing to cancel on the cluster.
            pending.remove(at: position)
            queue.async { attempt.finish(exitStatus: nil, state: nil, problem: "never submitted") }
            return
        }
        guard let jobID = attempt.jobID else {
            // sbatch in flight: the job is cancelled when its id comes. One that does not
            // answer is not waited for once every attempt it submits is stopped: killed at
            // once for a teardown that begins with `.kill`, after the first grace otherwise.
            if let (serial, entry) = sbatches.first(where: { $0.value.attempts.contains { $0 === attempt } }),
               entry.attempts.allSatisfy({ $0.stoppedAs != nil }) {
                var wait = 0.0
                if case .signal(_, let grace) = steps.first { wait = Double(grace.nanoseconds) / 1e9 }
                queue.asyncAfter(deadline: .now() + wait) { [self] in
                    if let still = sbatches[serial], still.running === entry.running { still.running.kill() }
                }
            }
            return
        }
        enqueue(jobID, steps[...])
    }

    /// A signal step for some jobs, and the steps after its grace.
    private struct Signalling: Hashable {
        var signal: Int32
        var grace: Duration
        var then: [TeardownStep]
    }

    /// Puts `jobID` in this turn's `scancel` for the first of `steps`.
    private func enqueue(_ jobID: String, _ steps: ArraySlice<TeardownStep>) {
        guard let step = steps.first else { return }
        switch step {
        case .kill: toKill.insert(jobID)
        case .signal(let signal, let grace): toSignal[Signalling(signal: signal, grace: grace, then: Array(steps.dropFirst())), default: []].insert(jobID)
        }
        scheduleCancels()
    }

    private func scheduleCancels() {
        guard !cancelScheduled else { return }
        cancelScheduled = true
        // After this turn: a fail_fast or a quorum stops many at once, in one scancel.
        queue.async { [self] in
            cancelScheduled = false
            let signalling = toSignal
            // A job last seen queued (at its submission or a poll) is cancelled outright: it has no process to
            // signal, and a graceful stop would let it start meanwhile (a queued array element
            // takes the slot a signalled one frees). Slurm also applies `scancel --signal` on a
            // pending array element to the whole array. (One that started since it was seen gets
            // Slurm's own TERM, which its job script passes on with the task's kill_grace.)
            let queued = signalling.values.reduce(into: Set<String>()) { $0.formUnion($1) }.filter { id in
                active[id]?.lastState?.state == "PENDING"
            }
            let killEverything = toKill.filter { active[$0] != nil }.count == active.count
            let kill = toKill.union(queued).filter { active[$0] != nil }.sorted()
            toSignal = [:]
            toKill = []
            for (step, jobs) in signalling {
                let ids = jobs.subtracting(kill).filter { active[$0] != nil }.sorted()
                guard !ids.isEmpty else { continue }
                let name = TeardownStep.signalName(step.signal) ?? String(step.signal)
                askToStop(ids, as: name)
                scancel(["--full", "--signal=\(name)"] + ids)
                queue.asyncAfter(deadline: .now() + .nanoseconds(Int(step.grace.nanoseconds))) { [self] in
                    for id in ids where active[id] != nil { enqueue(id, step.then[...]) }
                }
            }
            if !kill.isEmpty { killNow(kill, everything: killEverything) }
            schedulePoll(after: 1)
        }
    }

    /// `.kill`: Slurm's own cancel is TERM, then KILL only after the
    /// cluster's `KillWait` (30 s by default), and the job script passes a
    /// TERM on with the task's grace. So a job seen started gets QUIT first,
    /// on which its script SIGKILLs the task's process group at once
    /// (`SlurmJobScript.element`); then the plain `scancel` for every job
    /// (queued ones, and any whose script did not answer). Every job going at
    /// once (a second Ctrl-C): by the run's name, which takes every job, one
    /// whose sbatch was killed before it said the id too.
    private func killNow(_ ids: [String], everything: Bool) {
        let cancel = everything ? ["--name=\(jobName)"] : ids
        // Every job, those last seen queued too: Slurm's own cancel is a TERM to the job's
        // script, lost as a `scancel --signal` is when the script has not started yet (one
        // seen PENDING may be just starting), and the task then ran until Slurm's KILL,
        // `KillWait` later (measured: a Ctrl-C as squeue first said R took 31 s, 1 in 15).
        askToStop(ids, as: "QUIT")
        let started = ids.filter { active[$0]?.lastState?.state != "PENDING" }
        guard !started.isEmpty else { return scancel(cancel) }
        // Never a signal to a queued array element: Slurm applies it to the whole array.
        quit(["--full", "--signal=QUIT"] + (everything ? ["--state=RUNNING", "--name=\(jobName)"] : started), then: cancel)
    }

    /// Writes the stop's signal name to each job's `.stop` file before its
    /// `scancel --signal` or `scancel`: Slurm drops a signal that reaches a job whose
    /// script has not started yet, and the script reads this file once its
    /// traps are set (`SlurmJobScript.element`). Best effort: a file that
    /// cannot be written leaves the next teardown step, after the grace.
    private func askToStop(_ ids: [String], as signal: String) {
        for id in ids {
            guard let attempt = active[id] else { continue }
            _ = Self.write(signal + "\n", to: attempt.spec.files.stop)
        }
    }

    /// `scancel --signal=QUIT`, then the `scancel` with `cancel`. Tried
    /// again only when it was killed (the engine's sweep of every descendant
    /// when the supervisor died): one that failed found a job gone, which a
    /// second try would too.
    private func quit(_ arguments: [String], then cancel: [String], tries: Int = 0) {
        SlurmCommand.run([tools.scancel] + arguments, environment: environment, reaper: reaper, queue: queue) { [self] outcome in
            dispatchPrecondition(condition: .onQueue(queue))
            guard outcome.status > 128, tries < 5 else { return scancel(cancel) }
            queue.asyncAfter(deadline: .now() + min(Double(1 << tries) * 0.2, 2)) { [self] in quit(arguments, then: cancel, tries: tries + 1) }
        }
    }

    /// Cancelling is idempotent: any failure is tried again (a busy
    /// controller, or the scancel itself killed by the engine's sweep of
    /// every descendant when the supervisor died), up to 6 times.
    private func scancel(_ arguments: [String], tries: Int = 0) {
        SlurmCommand.run([tools.scancel] + arguments, environment: environment, reaper: reaper, queue: queue) { [self] outcome in
            guard outcome.status != 0, tries < 5 else { return }
            queue.asyncAfter(deadline: .now() + min(Double(1 << tries) * 0.5, 4)) { [self] in scancel(arguments, tries: tries + 1) }
        }
    }

    // MARK: Polling

    /// The next poll in `seconds`, never sooner than a second after the last
    /// (at most one `squeue` a second), unless one is set sooner already.
    private func schedulePoll(after seconds: Double) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !active.isEmpty || submitting > 0 else { return }
        let now = Self.now()
        let at = max(now + seconds, lastPollAt + 1)
        if let pollTimer, nextPollAt <= at, nextPollAt > now { _ = pollTimer; return }
        pollTimer?.cancel()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + (at - now))
        timer.setEventHandler { [weak self] in self?.poll() }
        nextPollAt = at
        pollTimer = timer
        timer.resume()
    }

    private var nextPollAt = 0.0

    private func poll() {
        dispatchPrecondition(condition: .onQueue(queue))
        pollTimer?.cancel()
        pollTimer = nil
        guard !pollInFlight, !active.isEmpty else { return }
        pollInFlight = true
        lastPollAt = Self.now()
        squeueCalls += 1
        let arguments = [tools.squeue, "--noheader", "--array", "--states=all", "--name=\(jobName)", "--format=%i|%T|%N"]
        SlurmCommand.run(arguments, environment: environment, reaper: reaper, queue: queue) { [self] outcome in
            dispatchPrecondition(condition: .onQueue(queue))
            pollInFlight = false
            guard outcome.status == 0 else {
                // The controller busy or restarting: not a task's failure; ask again later.
                pollInterval = min(pollInterval * 2, 10)
                schedulePoll(after: pollInterval)
                return
            }
            let changed = update(with: SlurmQueueState.parseSqueue(outcome.output))
            pollInterval = changed ? 1 : min(pollInterval * 1.5, 10)
            schedulePoll(after: pollInterval)
        }
    }

    /// Applies one poll's states; true if anything changed.
    private func update(with states: [String: SlurmJobState]) -> Bool {
        var changed = false
        var lost: [SlurmAttempt] = []
        for (jobID, attempt) in active.sorted(by: { $0.key < $1.key }) {
            let state = states[jobID]
            if let state, state != attempt.lastState {
                changed = true
                attempt.saw(state)
            }
            attempt.readNewOutput()
            if state == nil || state!.isFinal {
                if let status = attempt.exitStatus() {
                    end(attempt, exitStatus: status, state: state)
                    changed = true
                } else if state == nil, attempt.stoppedAs != nil {
                    // Stopped by flowrun and gone from squeue: scancel did it, no exit file will
                    // come, and the run (a second Ctrl-C) need not wait three polls and a sacct.
                    end(attempt, exitStatus: nil, state: nil)
                    changed = true
                } else if let state, state.state != "COMPLETED", state.reason != nil || attempt.pollsWithoutExit >= 2 {
                    // Slurm ended it (TIMEOUT, NODE_FAIL, CANCELLED, …): no exit file will come.
                    end(attempt, exitStatus: nil, state: state)
                    changed = true
                } else {
                    attempt.pollsWithoutExit += 1
                    if attempt.pollsWithoutExit >= 3 { lost.append(attempt) }
                }
            }
        }
        if !lost.isEmpty { askAccounting(about: lost) }
        return changed
    }

    private func end(_ attempt: SlurmAttempt, exitStatus: Int?, state: SlurmJobState?) {
        if let jobID = attempt.jobID { active[jobID] = nil }
        attempt.finish(exitStatus: exitStatus, state: state)
    }

    /// Jobs gone from `squeue` without an exit file: one `sacct` for all of
    /// them; where accounting is off, what Slurm wrote into the job's own output.
    private func askAccounting(about attempts: [SlurmAttempt]) {
        guard !sacctInFlight else { return }
        sacctInFlight = true
        let ids = attempts.compactMap(\.jobID)
        let arguments = [tools.sacct, "--noheader", "--parsable2", "--format=JobID,State", "--jobs=\(ids.joined(separator: ","))"]
        SlurmCommand.run(arguments, environment: environment, reaper: reaper, queue: queue) { [self] outcome in
            dispatchPrecondition(condition: .onQueue(queue))
            sacctInFlight = false
            let states = outcome.status == 0 ? SlurmQueueState.parseSacct(outcome.output) : [:]
            for attempt in attempts where !attempt.isDone {
                guard let jobID = attempt.jobID else { continue }
                if let status = attempt.exitStatus() {
                    end(attempt, exitStatus: status, state: nil)
                } else if let state = states[jobID], state.isFinal {
                    end(attempt, exitStatus: nil, state: state)
                } else if let state = slurmOutputState(of: attempt) {
                    end(attempt, exitStatus: nil, state: SlurmJobState(state: state, node: nil))
                } else if attempt.pollsWithoutExit >= 5 {
                    end(attempt, exitStatus: nil, state: attempt.lastState.map { SlurmJobState(state: $0.isFinal ? $0.state : "UNKNOWN", node: nil) })
                }
            }
        }
    }

    /// The state Slurm's own message in `slurm-JOB.out` gives, if any.
    private func slurmOutputState(of attempt: SlurmAttempt) -> String? {
        guard let path = attempt.slurmOutput else { return nil }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 16 * 1024)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        return SlurmQueueState.stateFromJobOutput(String(decoding: bytes.prefix(max(0, count)), as: UTF8.self))
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
