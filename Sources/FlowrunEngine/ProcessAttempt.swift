import CFlowrunSystem
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues
import FlowrunEvents
import FlowrunRecord

/// `run: SCRIPT`: one attempt as a process tree.
///
/// The shell starts leading its own process group (and, when flowrun has a
/// terminal, a session of its own) with a tree marker in its
/// environment. Its stdout and stderr come through two pipes, read by the
/// `OutputPump` (one thread for all tasks): every chunk is appended to the
/// task's log at once (the `TaskLog` is created at the first byte), and
/// stdout's chunks are fed to a `StdoutCapture` (the last 1 MiB, progress
/// lines out), so memory stays flat whatever the task prints. The attempt is
/// over when the shell has exited, both pipes have closed and nothing of its
/// tree is left: leftovers (a background job, a `setsid` daemon) are stopped
/// like a timeout would stop them.
final class ProcessAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: two owners, each checked where it comes in. The engine's
    // `queue` owns the lifecycle, `pid`, `stoppedAs`, `openOutputs`,
    // `finalCapture` and the descriptor retries: `dispatchPrecondition` at
    // `start`, `stop`, `kill` and every callback the reaper, the killer and
    // the pump deliver there. The pump's thread (the event loop's) owns
    // `capture`, `lastProgress`, `log`, the maskers and `--stream`'s
    // `partialLine` and `partialErrorLine` from the spawn until both pipes
    // have ended (the capture is then handed to `queue`):
    // `preconditionOnLoopThread` in each reader.
    struct Setup {
        var shell: String
        /// The workflow's `shell:` arguments, before `-c` (`bash -euo pipefail`).
        var shellArguments: [String] = []
        var script: String
        /// `SHELL -c`, a task's `shell:`, or the script's own `#!` line.
        var launch: ScriptLaunch = .shellCommand
        /// The script's words when it is one simple command, exec'd without
        /// the shell (`DirectCommand`), looked up in `commandSearchPath`.
        var directCommand: [String]? = nil
        var commandSearchPath = ""
        var environment: [String]
        var inherited: InheritedEnvironment?
        var workingDirectory: String?
        /// The task's log in the run record.
        var log: TaskLog
        /// The log's path through flowrun's handle on the run folder: the
        /// files flowrun makes for an attempt (a long stdout, a long script)
        /// are named after it, and never reached through a swapped folder.
        var logPathForFiles: String
        /// The attempt's number (from 1): names the files flowrun makes for it next to the log.
        var attempt: Int
        /// The run record's folder, and the name of this attempt's
        /// `$FLOWRUN_OUTPUT` file in its `outputs/`.
        var record: RunFolder
        var outputFileName: String
        var tree: ProcessTreeMarker
        var grace: Duration
        /// Hides secrets in what goes to the log and `--stream` (nil: none).
        var secretMasker: SecretMasker?
        /// The attempt's cgroup (a task with `resources:` where flowrun can make one).
        var cgroup: AttemptCgroup? = nil
    }

    private let setup: Setup
    private let queue: DispatchQueue
    private let pump: OutputPump
    private let reaper: ChildReaper
    private let killer: ProcessTreeKiller
    private let onProgress: (Int) -> Void
    /// With `--stream`: each whole line of output (true: of stderr), on the pump's thread.
    private let onLine: ((String, Bool) -> Void)?
    private var partialLine: [UInt8] = []
    private var partialErrorLine: [UInt8] = []
    private let completion: (AttemptResult) -> Void
    /// Whether flowrun has children that are not running task shells.
    private let escapeesExist: () -> Bool
    /// Descriptors ran short (EMFILE, ENFILE): hands the engine a retry to
    /// run when a task ends; false if no task runs that would free any.
    private let waitForDescriptors: (@escaping () -> Void) -> Bool
    /// Whether one more task's descriptors fit under flowrun's limit now.
    private let descriptorsFit: () -> Bool
    /// Retries made while no other task ran (see `waitsForDescriptors`).
    private var idleDescriptorRetries = 0
    /// Descriptors ran out with nothing running to free any: the run stops.
    private var outOfDescriptors = false

    /// The shell's pid (= its process group), 0 until started.
    private(set) var pid: Int32 = 0
    /// Where the attempt is in its life (see `Lifecycle`).
    private var lifecycle = Lifecycle.notStarted(waitingForDescriptors: false)
    /// The outcome a stop asked for (a timeout, a cancel): it overrides the
    /// exit's in the result, whenever in the lifecycle it was asked for.
    private var stoppedAs: (status: TaskStatus, reason: String)?
    /// The pump's registrations of the read ends (stdout's, stderr's) whose
    /// output has not ended yet.
    private var openOutputs: [OutputPump.Registration] = []
    private var capture: StdoutCapture
    private let log: TaskLog
    /// One masker per pipe: a secret may be cut across two chunks of one.
    private let stdoutMasking: SecretMaskingStream?
    private let stderrMasking: SecretMaskingStream?
    private var lastProgress = -1
    /// What the shell's `wait4` said it and its waited-for descendants used.
    private var exitUsage: ResourceUsage?

    init(_ setup: Setup, queue: DispatchQueue, pump: OutputPump, reaper: ChildReaper, killer: ProcessTreeKiller,
         escapeesExist: @escaping () -> Bool, descriptorsFit: @escaping () -> Bool = { true },
         waitForDescriptors: @escaping (@escaping () -> Void) -> Bool = { _ in false },
         onProgress: @escaping (Int) -> Void, onLine: ((String, Bool) -> Void)? = nil,
         completion: @escaping (AttemptResult) -> Void) {
        self.onLine = onLine
        self.waitForDescriptors = waitForDescriptors
        self.descriptorsFit = descriptorsFit
        self.escapeesExist = escapeesExist
        self.setup = setup
        self.queue = queue
        self.pump = pump
        self.reaper = reaper
        self.killer = killer
        self.onProgress = onProgress
        self.completion = completion
        log = setup.log
        // The window is two bytes over the limit, so a value of exactly 1 MiB
        // keeps its `\r\n` and stays whole; any longer value is spilled whole.
        capture = StdoutCapture(
            limit: ValueLimit.bytes + 2, spill: StdoutSpill.Location(log: setup.logPathForFiles, attempt: setup.attempt),
            spillAfter: ValueLimit.bytes)
        stdoutMasking = setup.secretMasker?.stream()
        stderrMasking = setup.secretMasker?.stream()
    }

    var tree: ProcessTree { ProcessTree(processGroup: pid, marker: setup.tree) }

    func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        // Neither the log nor $FLOWRUN_OUTPUT is created here: a task that
        // prints nothing costs no log, one that writes no outputs no outputs
        // file (`>>` creates it; each attempt has its own name).
        // Under a tight limit, wait before the pipes: the log is opened
        // later, when the task first prints, and must not be what fails.
        if !descriptorsFit(), waitsForDescriptors(EMFILE) { return }
        var stdoutPipe: [Int32] = [-1, -1]
        var stderrPipe: [Int32] = [-1, -1]
        guard flowrun_pipe_cloexec(&stdoutPipe) == 0 else {
            let error = errno
            if waitsForDescriptors(error) { return }
            fail("cannot set up the task's output: \(String(cString: strerror(error)))")
            return
        }
        guard flowrun_pipe_cloexec(&stderrPipe) == 0 else {
            let error = errno
            for end in stdoutPipe { close(end) }
            if waitsForDescriptors(error) { return }
            fail("cannot set up the task's output: \(String(cString: strerror(error)))")
            return
        }
        // Added before the spawn: epoll then reports the pipes in the order
        // the task wrote to them (a line to stdout, then two to stderr, land
        // in the log in that order), however late this thread runs.
        let (stdoutRead, stderrRead) = (stdoutPipe[0], stderrPipe[0])
        let stdoutRegistration = pump.add(stdoutRead, OutputPump.Reader(
            data: { [self] chunk in
                pump.loop.preconditionOnLoopThread()
                show(chunk, through: stdoutMasking) { shown in
                    log.write(shown)
                    if onLine != nil { streamLines(shown, into: &partialLine, isError: false) }
                }
                if let progress = capture.append(chunk) { reportProgress(progress) }
            },
            end: { [self] in
                pump.loop.preconditionOnLoopThread()
                let capture = stdoutEnded()
                pump.loop.deliver { self.outputEnded(stdoutRead, capture: capture) }
            }))
        let stderrRegistration = pump.add(stderrRead, OutputPump.Reader(
            data: { [self] chunk in
                pump.loop.preconditionOnLoopThread()
                show(chunk, through: stderrMasking) { shown in
                    log.write(shown)
                    if onLine != nil { streamLines(shown, into: &partialErrorLine, isError: true) }
                }
            },
            end: { [self] in
                pump.loop.preconditionOnLoopThread()
                stderrEnded()
                if let onLine, !partialErrorLine.isEmpty { onLine(String(decoding: partialErrorLine, as: UTF8.self), true) }
                pump.loop.deliver { self.outputEnded(stderrRead, capture: nil) }
            }))
        openOutputs = [stdoutRegistration, stderrRegistration]
        var request = LaunchRequest(
            shell: setup.shell, script: setup.script, shellArguments: setup.shellArguments, environment: setup.environment, inherited: setup.inherited,
            workingDirectory: setup.workingDirectory, standardOutput: stdoutPipe[1], standardError: stderrPipe[1])
        request.cgroupProcs = setup.cgroup?.procs ?? []
        let throughShell = request
        if let words = setup.directCommand {
            request.runDirectly(words, searchPath: setup.commandSearchPath)
        } else if setup.launch.usesFile || ScriptFile.isNeeded(for: setup.script) {
            let path = RunFolderFile.path(forLog: setup.logPathForFiles, attempt: setup.attempt, suffix: setup.launch.usesFile ? "script" : "sh")
            if let problem = ScriptFile.write(setup.script, to: path, executable: setup.launch.runsItself) {
                discardPipes(stdoutPipe, stderrPipe)
                fail(problem)
                return
            }
            request.run(setup.launch, from: path)
        }
        do {
            pid = try launch(request, orElse: setup.directCommand == nil ? nil : throughShell)
            lifecycle = .started(exit: nil, tree: .live)
            setup.cgroup?.closeProcs()
        } catch {
            discardPipes(stdoutPipe, stderrPipe)
            if waitsForDescriptors(error.code) { return }
            if error.code == E2BIG {
                // Each value fits, but all of them together pass the kernel's limit (ARG_MAX).
                fail("cannot start \(setup.shell): the task's environment is larger than the kernel accepts for a new process (\(setup.environment.reduce(0) { $0 + $1.utf8.count + 1 }.grouped) bytes of variables set by flowrun and env:, besides the inherited ones); pass large values through files")
            } else {
                fail("cannot start \(setup.shell): \(error)")
            }
            return
        }
        close(stdoutPipe[1])
        close(stderrPipe[1])
    }

    /// The spawn did not happen: the pump forgets the read ends (and closes
    /// them), then the write ends are closed, so no end of file is seen.
    private func discardPipes(_ stdoutPipe: [Int32], _ stderrPipe: [Int32]) {
        pump.discard(openOutputs)
        openOutputs = []
        close(stdoutPipe[1])
        close(stderrPipe[1])
    }

    /// Starts `request`; if it execs a command directly and the exec fails,
    /// starts `throughShell` instead, whose shell then says what sh says
    /// (not found: 127, not executable: 126) or runs a script without `#!`.
    private func launch(_ request: LaunchRequest, orElse throughShell: LaunchRequest?) throws(ProcessError) -> Int32 {
        do {
            // Held strongly until the exit (a weak reference would cost each attempt a side table).
            return try reaper.launch(request, on: queue, measured: { exit, usage in self.exited(exit, usage) })
        } catch {
            guard error.failedAtExec, let throughShell else { throw error }
            return try reaper.launch(throughShell, on: queue, measured: { exit, usage in self.exited(exit, usage) })
        }
    }

    /// On the pump's thread, when stdout has ended: the last partial line and
    /// progress value, and the capture as it stands.
    private func stdoutEnded() -> StdoutCapture {
        stdoutMasking?.finish { shown in
            log.write(shown)
            if onLine != nil { streamLines(shown, into: &partialLine, isError: false) }
        }
        if let onLine, !partialLine.isEmpty { onLine(String(decoding: partialLine, as: UTF8.self), false) }
        if let progress = capture.finish() { reportProgress(progress) }
        return capture
    }

    /// On the pump's thread, when stderr has ended: what its masker held back.
    private func stderrEnded() {
        stderrMasking?.finish { log.write($0) }
    }

    /// On the pump's thread: output as it may be shown, secrets masked (a
    /// few bytes that may begin one wait for the next chunk).
    private func show(_ chunk: UnsafeRawBufferPointer, through masking: SecretMaskingStream?, _ sink: (UnsafeRawBufferPointer) -> Void) {
        if let masking { masking.write(chunk, to: sink) } else { sink(chunk) }
    }

    /// Text flowrun itself writes to the log, secrets masked.
    private func shown(_ text: String) -> String { setup.secretMasker?.mask(text) ?? text }

    /// On the pump's thread: hands on whole lines, keeping a partial one
    /// (at most 64 KiB of it) for the next chunk.
    private func streamLines(_ chunk: UnsafeRawBufferPointer, into partialLine: inout [UInt8], isError: Bool) {
        guard let onLine else { return }
        var start = 0
        for (offset, byte) in chunk.enumerated() where byte == UInt8(ascii: "\n") {
            partialLine.append(contentsOf: chunk[start..<offset])
            let line = String(decoding: partialLine, as: UTF8.self)
            partialLine.removeAll(keepingCapacity: true)
            if isError || !line.hasPrefix("::progress::") { onLine(line, isError) }
            start = offset + 1
        }
        partialLine.append(contentsOf: chunk[start...])
        if partialLine.count > 64 * 1024 {
            onLine(String(decoding: partialLine, as: UTF8.self), isError)
            partialLine.removeAll(keepingCapacity: true)
        }
    }

    /// On the pump's thread: forwards whole-percent changes only.
    private func reportProgress(_ value: Double) {
        let percent = Int(value.rounded(.down))
        guard percent != lastProgress else { return }
        lastProgress = percent
        queue.async { [weak self] in self?.onProgress(percent) }
    }

    private var finalCapture: StdoutCapture?

    /// One pipe's output ended (the pump has closed it); stdout's brings the capture.
    private func outputEnded(_ descriptor: Int32, capture: StdoutCapture?) {
        dispatchPrecondition(condition: .onQueue(queue))
        openOutputs.removeAll { $0.descriptor == descriptor }
        if let capture { finalCapture = capture }
        finishIfOver()
    }

    private func exited(_ exit: ProcessExit, _ usage: ResourceUsage) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .started(nil, let tree) = lifecycle else { return }
        exitUsage = usage
        lifecycle = .started(exit: exit, tree: tree)
        finishIfOver()
    }

    /// Over when the shell has exited, nothing of its tree is left and both pipes have closed.
    private func finishIfOver() {
        switch lifecycle {
        case .started(let exit?, let tree):
            switch tree {
            case .live:
                if ProcessTreeKiller.hasLiveMembers(processGroup: pid) || escapeesExist() {
                    // Leftovers (a background job, a daemon): stop them as a timeout would.
                    stopTree()
                    return
                }
            case .stopping:
                return
            case .gone:
                break
            }
            // No writer of the tree is left, so the pipes end as soon as their last
            // bytes are read; should something outside the tree still hold one (a
            // setsid, env -i escapee), stop listening soon — whichever way the tree went.
            guard openOutputs.isEmpty else {
                lifecycle = .closingOutputs(exit)
                queue.asyncAfter(deadline: .now() + 2) { [weak self] in
                    guard let self, case .closingOutputs = self.lifecycle else { return }
                    for registration in self.openOutputs { self.pump.close(registration) }
                }
                return
            }
            complete(exit)
        case .closingOutputs(let exit):
            if openOutputs.isEmpty { complete(exit) }
        case .notStarted, .started(nil, _), .done:
            return
        }
    }

    /// Stops the tree as a timeout would (SIGTERM, the grace, SIGKILL), once.
    private func stopTree() {
        guard case .started(let exit, .live) = lifecycle else { return }
        lifecycle = .started(exit: exit, tree: .stopping)
        killer.terminate(tree, grace: setup.grace, on: queue) { [weak self] in self?.treeStopped() }
    }

    /// Nothing of the tree is left (the killer saw to it).
    private func treeStopped() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .started(let exit, _) = lifecycle else { return }
        lifecycle = .started(exit: exit, tree: .gone)
        finishIfOver()
    }

    func stop(as status: TaskStatus, reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !lifecycle.isDone, stoppedAs == nil else { return }
        stoppedAs = (status, reason)
        if case .notStarted(waitingForDescriptors: true) = lifecycle { return endWaitingForDescriptors(as: status, reason: reason) }
        guard pid > 0 else { return }
        stopTree()
    }

    func kill() {
        dispatchPrecondition(condition: .onQueue(queue))
        switch lifecycle {
        case .notStarted(waitingForDescriptors: true):
            endWaitingForDescriptors(as: stoppedAs?.status ?? .cancelled, reason: stoppedAs?.reason ?? "killed")
        case .started(let exit, _):
            if stoppedAs == nil { stoppedAs = (.cancelled, "killed") }
            lifecycle = .started(exit: exit, tree: .stopping)
            killer.kill(tree, on: queue) { [weak self] in self?.treeStopped() }
        case .closingOutputs:
            // The tree is gone already; only pipes held outside it are left.
            if stoppedAs == nil { stoppedAs = (.cancelled, "killed") }
        case .notStarted, .done:
            return
        }
    }

    private func complete(_ exit: ProcessExit) {
        lifecycle = .done
        var result: AttemptResult
        switch exit {
        case .exited(let code):
            result = AttemptResult(status: code == 0 ? .succeeded : .failed, exitCode: Int(code), reason: code == 0 ? nil : "exit \(code)")
        case .signalled(let signal):
            result = AttemptResult(status: .failed, exitCode: 128 + Int(signal), signal: Int(signal), reason: "killed by \(ProcessExit.signalled(signal))")
        }
        if let stoppedAs {
            result.status = stoppedAs.status
            result.reason = stoppedAs.reason
        }
        result.usage = exitUsage
        if let cgroup = setup.cgroup {
            // Whatever is left in it goes (the tree killer found the rest); then what it used.
            let reading = cgroup.end()
            if let peak = reading.peakMemoryBytes { result.usage?.peakMemoryBytes = peak }
            // Read from the cgroup, not guessed from the exit: the kernel killed for the limit.
            let killed = reading.outOfMemoryKills.map { $0 > 0 } ?? (reading.limitHits > 0 && result.signal == Int(SIGKILL))
            if killed, result.status == .failed, stoppedAs == nil, let limit = cgroup.memoryLimit {
                result.outOfMemory = true
                result.reason = OutOfMemory.reason(limitBytes: limit)
            }
        }
        result.stdout = finalCapture?.stash ?? ""
        if let finalCapture, finalCapture.valueByteCount > ValueLimit.bytes {
            result.oversizedStdout = OversizedStdout(byteCount: finalCapture.valueByteCount, file: finalCapture.spilledPath)
            result.stdout = ValueLimit.tail(result.stdout)  // shown in the summary and join blocks, never used as the value
        }
        result.outputs = readOutputs()
        // Closed first: a small log is written to the pack only now, and may fail.
        log.close()
        if let problem = log.problem ?? finalCapture?.spillProblem {
            // Output that could not be kept is output lost: say so, and fail.
            result.status = result.status == .succeeded ? .failed : result.status
            result.reason = problem
        }
        result.wroteLog = log.exists
        completion(result)
    }

    /// `$FLOWRUN_OUTPUT`, parsed; problems go to the task's log.
    private func readOutputs() -> [(key: String, value: String)] {
        // Relative to the run folder flowrun holds, never through a link.
        let descriptor = setup.record.openOutputsFile(setup.outputFileName)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var info = stat()
        fstat(descriptor, &info)
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: min(size, OutputFileParser.sizeLimit + 1))
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        let parsed = OutputFileParser.parse(Array(bytes.prefix(max(0, count))), fileSize: size)
        for problem in parsed.problems { log.write(shown("flowrun: $FLOWRUN_OUTPUT \(problem)\n")) }
        return parsed.pairs
    }

    /// When `error` says descriptors ran short (EMFILE, ENFILE), the attempt
    /// starts again once another task has ended and freed some; with no
    /// other task running, every 50 ms for at most 5 s (descriptors a task
    /// that just ended still held come free a moment later). False: fail.
    private func waitsForDescriptors(_ error: Int32) -> Bool {
        guard error == EMFILE || error == ENFILE else { return false }
        lifecycle = .notStarted(waitingForDescriptors: true)
        if waitForDescriptors({ [weak self] in self?.startAfterWaiting() }) { return true }
        // No task runs that would free any. flowrun's own may be closing (a
        // pipe the pump closes as its batch ends, a /proc scan): a few quick
        // tries, then the run stops rather than crawl (5 s a member, once).
        guard idleDescriptorRetries < 10 else {
            lifecycle = .notStarted(waitingForDescriptors: false)
            outOfDescriptors = true
            return false
        }
        idleDescriptorRetries += 1
        queue.asyncAfter(deadline: .now() + .milliseconds(20)) { [weak self] in self?.startAfterWaiting() }
        return true
    }

    private func startAfterWaiting() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .notStarted(waitingForDescriptors: true) = lifecycle else { return }
        lifecycle = .notStarted(waitingForDescriptors: false)
        start()
    }

    /// Stopped (a timeout, a cancel) while it waited for descriptors: it
    /// never started, so it ends at once.
    private func endWaitingForDescriptors(as status: TaskStatus, reason: String) {
        _ = setup.cgroup?.end()
        lifecycle = .done
        log.close()
        var result = AttemptResult(status: status, reason: reason)
        result.wroteLog = log.exists
        queue.async { [result] in self.completion(result) }
    }

    private func fail(_ reason: String) {
        _ = setup.cgroup?.end()
        // No descriptor for a log either: the reason is in the record's events and the run's message.
        if !outOfDescriptors { log.write(shown("flowrun: \(reason)\n")) }
        log.close()
        lifecycle = .done
        var result = AttemptResult(status: .failed, reason: outOfDescriptors ? "no file descriptor left (ulimit -n \(DescriptorLimit.current))" : reason)
        result.wroteLog = log.exists
        result.outOfDescriptors = outOfDescriptors
        queue.async { [result] in self.completion(result) }
    }
}

extension ProcessAttempt {
    /// An attempt's life, one value, so no combination of flags can be half-updated:
    ///
    ///     notStarted ──start──▶ started(exit: nil, tree: .live) ──reaped──▶ started(exit, …)
    ///         │ descriptors short: notStarted(waitingForDescriptors: true), then start again
    ///     started: tree .live ──leftovers, stop, kill──▶ .stopping ──killer done──▶ .gone
    ///     started(exit, .gone), a pipe still open ──▶ closingOutputs(exit) (closed after 2 s)
    ///     started(exit, .gone) or closingOutputs(exit), pipes ended ──▶ done
    ///     notStarted, on failing to start or a stop while waiting ──▶ done
    enum Lifecycle {
        /// Nothing started: before `start`, or between tries while descriptors run short.
        case notStarted(waitingForDescriptors: Bool)
        /// The shell was started: its exit once reaped, and its process tree.
        case started(exit: ProcessExit?, tree: Tree)
        /// Exited, nothing of the tree left; a pipe something outside the
        /// tree still holds is being given its last 2 s.
        case closingOutputs(ProcessExit)
        /// The result was handed on.
        case done

        enum Tree {
            /// Not known to be gone: looked at when the shell exits.
            case live
            /// Being stopped (SIGTERM, the grace, SIGKILL): a timeout, a cancel, leftovers.
            case stopping
            case gone
        }

        var isDone: Bool {
            if case .done = self { return true }
            return false
        }
    }
}
