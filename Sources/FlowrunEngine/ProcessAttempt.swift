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
/// `OutputPump` (one thread for all tasks): every chunk goes at once to the
/// attempt's `AttemptOutput` (the task's log, created at the first byte; the
/// stash's capture, the last 1 MiB with progress lines out), so memory
/// stays flat whatever the task prints. The attempt is
/// over when the shell has exited, both pipes have closed and nothing of its
/// tree is left: leftovers (a background job, a `setsid` daemon) are stopped
/// like a timeout would stop them.
final class ProcessAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: every mutable field (the lifecycle, `pid`, `stoppedAs`,
    // `openOutputs`, `exitUsage`, the descriptor retries) is the engine
    // `queue`'s: `dispatchPrecondition` at `start`, `cancel` and every
    // callback the reaper, the killer and the pump deliver there
    // (ThreadRuleTests). The pump's readers, on the event loop's thread
    // (`preconditionOnLoopThread`), touch only `output`, which is Sendable
    // (its own `Mutex`), and hop to `queue` for the rest.
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
        /// The grace leftovers get (SIGTERM, then SIGKILL) once the shell has exited.
        var grace: Duration
        /// The attempt's cgroup (a task with `resources:` where flowrun can make one).
        var cgroup: AttemptCgroup? = nil
    }

    private let setup: Setup
    private let queue: DispatchQueue
    private let pump: OutputPump
    private let reaper: ChildReaper
    private let killer: ProcessTreeKiller
    /// The log, the stash's capture, progress and `--stream`: fed on the pump's thread.
    private let output: AttemptOutput
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
    /// What the shell's `wait4` said it and its waited-for descendants used.
    private var exitUsage: ResourceUsage?

    init(_ setup: Setup, output: AttemptOutput, queue: DispatchQueue, pump: OutputPump, reaper: ChildReaper, killer: ProcessTreeKiller,
         escapeesExist: @escaping () -> Bool, descriptorsFit: @escaping () -> Bool = { true },
         waitForDescriptors: @escaping (@escaping () -> Void) -> Bool = { _ in false },
         completion: @escaping (AttemptResult) -> Void) {
        self.output = output
        self.waitForDescriptors = waitForDescriptors
        self.descriptorsFit = descriptorsFit
        self.escapeesExist = escapeesExist
        self.setup = setup
        self.queue = queue
        self.pump = pump
        self.reaper = reaper
        self.killer = killer
        self.completion = completion
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
            data: { [output, pump] chunk in
                pump.loop.preconditionOnLoopThread()
                output.write(chunk, .stdout)
            },
            end: { [self] in
                pump.loop.preconditionOnLoopThread()
                output.end(.stdout)
                pump.loop.deliver { self.outputEnded(stdoutRead) }
            }))
        let stderrRegistration = pump.add(stderrRead, OutputPump.Reader(
            data: { [output, pump] chunk in
                pump.loop.preconditionOnLoopThread()
                output.write(chunk, .stderr)
            },
            end: { [self] in
                pump.loop.preconditionOnLoopThread()
                output.end(.stderr)
                pump.loop.deliver { self.outputEnded(stderrRead) }
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

    /// Text flowrun itself writes to the log, secrets masked.
    private func note(_ text: String) { output.note(text) }

    /// One pipe's output ended (the pump has closed it).
    private func outputEnded(_ descriptor: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        openOutputs.removeAll { $0.descriptor == descriptor }
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

    /// Stops the leftovers of a tree whose shell has exited as a timeout
    /// would (SIGTERM, the grace, SIGKILL), once.
    private func stopTree() {
        guard case .started(let exit, .live) = lifecycle else { return }
        lifecycle = .started(exit: exit, tree: .stopping)
        killer.stop(tree, through: TeardownStep.graceful(setup.grace), on: queue) { [weak self] in self?.treeStopped() }
    }

    /// Nothing of the tree is left (the killer saw to it).
    private func treeStopped() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .started(let exit, _) = lifecycle else { return }
        lifecycle = .started(exit: exit, tree: .gone)
        finishIfOver()
    }

    func cancel(as status: TaskStatus, reason: String, through steps: [TeardownStep]) {
        dispatchPrecondition(condition: .onQueue(queue))
        if stoppedAs == nil, !lifecycle.isDone { stoppedAs = (status, reason) }
        switch lifecycle {
        case .notStarted(waitingForDescriptors: true):
            endWaitingForDescriptors(as: stoppedAs?.status ?? status, reason: stoppedAs?.reason ?? reason)
        case .started(let exit, let tree):
            // Gone already: only its exit or its pipes are awaited.
            guard tree != .gone else { return }
            lifecycle = .started(exit: exit, tree: .stopping)
            // A second cancel joins the first, or (steps beginning with `.kill`) ends its grace.
            killer.stop(self.tree, through: steps, on: queue) { [weak self] in self?.treeStopped() }
        case .closingOutputs:
            // The tree is gone already; only pipes held outside it are left.
            return
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
        result.outputs = readOutputs()
        result.take(output.close())
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
        for problem in parsed.problems { note("flowrun: $FLOWRUN_OUTPUT \(problem)\n") }
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
        var result = AttemptResult(status: status, reason: reason)
        result.wroteLog = output.close().wroteLog
        queue.async { [result] in self.completion(result) }
    }

    private func fail(_ reason: String) {
        _ = setup.cgroup?.end()
        // No descriptor for a log either: the reason is in the record's events and the run's message.
        if !outOfDescriptors { note("flowrun: \(reason)\n") }
        lifecycle = .done
        var result = AttemptResult(status: .failed, reason: outOfDescriptors ? "no file descriptor left (ulimit -n \(DescriptorLimit.current))" : reason)
        result.wroteLog = output.close().wroteLog
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
