import CFlowrunSystem
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// `run: SCRIPT`: one attempt as a process tree.
///
/// The shell starts in its own process group with a tree marker in its
/// environment. Its stdout comes through a pipe, read by the `OutputPump`
/// (one thread for all tasks): every chunk is appended to the task's log at
/// once and fed to a `StdoutCapture` (the last 1 MiB, progress lines out), so
/// memory stays flat whatever the task prints. Its stderr goes straight into
/// the log. The attempt is over when the shell has exited, its stdout has
/// closed and nothing of its tree is left: leftovers (a background job, a
/// `setsid` daemon) are stopped like a timeout would stop them.
final class ProcessAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: state below is touched on `queue` (the engine's), except
    // `capture` and `lastProgress`, which only the pump's thread touches
    // until it hands the capture back on `queue`.
    struct Setup {
        var shell: String
        var script: String
        var environment: [String]
        var workingDirectory: String?
        var logPath: String
        var outputPath: String
        var tree: ProcessTreeMarker
        var grace: Duration
    }

    private let setup: Setup
    private let queue: DispatchQueue
    private let pump: OutputPump
    private let reaper: ChildReaper
    private let killer: ProcessTreeKiller
    private let onProgress: (Int) -> Void
    /// With `--stream`: each whole line of output, on the pump's thread.
    private let onLine: ((String) -> Void)?
    private var partialLine: [UInt8] = []
    private let completion: (AttemptResult) -> Void
    /// Whether flowrun has children that are not running task shells.
    private let escapeesExist: () -> Bool

    /// The shell's pid (= its process group), 0 until started.
    private(set) var pid: Int32 = 0
    private var exit: ProcessExit?
    private var stdoutClosed = false
    private var stoppedAs: (status: TaskStatus, reason: String)?
    private var stopping = false
    private var treeGone = false
    private var done = false
    private var readDescriptor: Int32 = -1
    private var capture = StdoutCapture()
    private var logDescriptor: Int32 = -1
    private var lastProgress = -1
    private var stdoutDeadlineSet = false

    init(_ setup: Setup, queue: DispatchQueue, pump: OutputPump, reaper: ChildReaper, killer: ProcessTreeKiller,
         escapeesExist: @escaping () -> Bool, onProgress: @escaping (Int) -> Void, onLine: ((String) -> Void)? = nil,
         completion: @escaping (AttemptResult) -> Void) {
        self.onLine = onLine
        self.escapeesExist = escapeesExist
        self.setup = setup
        self.queue = queue
        self.pump = pump
        self.reaper = reaper
        self.killer = killer
        self.onProgress = onProgress
        self.completion = completion
    }

    var tree: ProcessTree { ProcessTree(processGroup: pid, marker: setup.tree) }

    func start() {
        // $FLOWRUN_OUTPUT is not created here: `>>` creates it, and a task that
        // writes no outputs costs no file (each attempt has its own name).
        logDescriptor = open(setup.logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        var pipeEnds: [Int32] = [-1, -1]
        guard logDescriptor >= 0, flowrun_pipe_cloexec(&pipeEnds) == 0 else {
            fail("cannot set up the task's output: \(String(cString: strerror(errno)))")
            return
        }
        let request = LaunchRequest(
            shell: setup.shell, script: setup.script, environment: setup.environment,
            workingDirectory: setup.workingDirectory, standardOutput: pipeEnds[1], standardError: logDescriptor)
        do {
            pid = try reaper.launch(request, on: queue) { [weak self] exit in self?.exited(exit) }
        } catch {
            close(pipeEnds[0])
            close(pipeEnds[1])
            fail("cannot start \(setup.shell): \(error)")
            return
        }
        close(pipeEnds[1])
        startReading(pipeEnds[0])
    }

    private func startReading(_ descriptor: Int32) {
        readDescriptor = descriptor
        let log = logDescriptor
        pump.add(descriptor, OutputPump.Reader(
            data: { [self] chunk in
                writeAll(log, chunk)
                if let progress = capture.append(chunk) { reportProgress(progress) }
                if onLine != nil { streamLines(chunk) }
            },
            end: { [self] in
                if let onLine, !partialLine.isEmpty { onLine(String(decoding: partialLine, as: UTF8.self)) }
                if let progress = capture.finish() { reportProgress(progress) }
                let capture = self.capture
                pump.deliver { self.stdoutEnded(capture) }
            }))
    }

    /// On the pump's thread: hands on whole lines, keeping a partial one
    /// (at most 64 KiB of it) for the next chunk.
    private func streamLines(_ chunk: UnsafeRawBufferPointer) {
        guard let onLine else { return }
        var start = 0
        for (offset, byte) in chunk.enumerated() where byte == UInt8(ascii: "\n") {
            partialLine.append(contentsOf: chunk[start..<offset])
            let line = String(decoding: partialLine, as: UTF8.self)
            partialLine.removeAll(keepingCapacity: true)
            if !line.hasPrefix("::progress::") { onLine(line) }
            start = offset + 1
        }
        partialLine.append(contentsOf: chunk[start...])
        if partialLine.count > 64 * 1024 {
            onLine(String(decoding: partialLine, as: UTF8.self))
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

    private func stdoutEnded(_ capture: StdoutCapture) {
        stdoutClosed = true
        finalCapture = capture
        finishIfOver()
    }

    private func exited(_ exit: ProcessExit) {
        self.exit = exit
        finishIfOver()
    }

    /// Over when the shell has exited, nothing of its tree is left and stdout has closed.
    private func finishIfOver() {
        guard !done, exit != nil else { return }
        if !treeGone && !stopping {
            if ProcessTreeKiller.hasLiveMembers(processGroup: pid) || escapeesExist() {
                // Leftovers (a background job, a daemon): stop them as a timeout would.
                stopTree()
                return
            }
            treeGone = true
        }
        guard treeGone else { return }
        // No writer of the tree is left, so stdout ends as soon as its last bytes
        // are read; should something outside the tree still hold it (a setsid,
        // env -i escapee), stop listening soon — whichever way the tree went.
        if !stdoutClosed {
            if !stdoutDeadlineSet {
                stdoutDeadlineSet = true
                queue.asyncAfter(deadline: .now() + 2) { [weak self] in
                    guard let self, !self.done else { return }
                    self.pump.close(self.readDescriptor)
                }
            }
            return
        }
        complete()
    }

    private func stopTree() {
        guard !stopping else { return }
        stopping = true
        killer.terminate(tree, grace: setup.grace, on: queue) { [weak self] in
            guard let self else { return }
            self.treeGone = true
            self.finishIfOver()
        }
    }

    func stop(as status: TaskStatus, reason: String) {
        guard !done, stoppedAs == nil else { return }
        stoppedAs = (status, reason)
        guard pid > 0 else { return }
        stopTree()
    }

    func kill() {
        guard !done, pid > 0 else { return }
        if stoppedAs == nil { stoppedAs = (.cancelled, "killed") }
        stopping = true
        killer.kill(tree, on: queue) { [weak self] in
            guard let self else { return }
            self.treeGone = true
            self.finishIfOver()
        }
    }

    private func complete() {
        guard !done else { return }
        done = true
        close(logDescriptor)
        var result: AttemptResult
        switch exit {
        case .exited(let code)?:
            result = AttemptResult(status: code == 0 ? .succeeded : .failed, exitCode: Int(code), reason: code == 0 ? nil : "exit \(code)")
        case .signalled(let signal)?:
            result = AttemptResult(status: .failed, exitCode: 128 + Int(signal), signal: Int(signal), reason: "killed by \(ProcessExit.signalled(signal))")
        case nil:
            result = AttemptResult(status: .failed)
        }
        if let stoppedAs {
            result.status = stoppedAs.status
            result.reason = stoppedAs.reason
        }
        result.stdout = finalCapture?.stash ?? ""
        result.outputs = readOutputs()
        completion(result)
    }

    /// `$FLOWRUN_OUTPUT`, parsed; problems go to the task's log.
    private func readOutputs() -> [(key: String, value: String)] {
        let descriptor = open(setup.outputPath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var info = stat()
        fstat(descriptor, &info)
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: min(size, OutputFileParser.sizeLimit + 1))
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        let parsed = OutputFileParser.parse(Array(bytes.prefix(max(0, count))), fileSize: size)
        if !parsed.problems.isEmpty {
            let log = open(setup.logPath, O_WRONLY | O_APPEND | O_CLOEXEC)
            if log >= 0 {
                for problem in parsed.problems { writeAll(log, "flowrun: $FLOWRUN_OUTPUT \(problem)\n") }
                close(log)
            }
        }
        return parsed.pairs
    }

    private func fail(_ reason: String) {
        if logDescriptor >= 0 {
            writeAll(logDescriptor, "flowrun: \(reason)\n")
            close(logDescriptor)
        }
        done = true
        let result = AttemptResult(status: .failed, reason: reason)
        queue.async { self.completion(result) }
    }
}

/// Children of flowrun that are not task shells: descendants that escaped
/// their group and were re-parented to flowrun, the child subreaper.
enum EscapedChildren {
    /// Whether flowrun has a child that is not one of `leaders` (the running
    /// task shells). Orphans are re-parented to the subreaper's main thread
    /// (flowrun never spawns from it), so one file tells: its `children`.
    /// `leaders` is asked for only when that file lists anyone (a task shell
    /// lands there when the Dispatch thread that spawned it exits).
    static func exist(besides leaders: () -> Set<Int32>) -> Bool {
        let descriptor = open(childrenPath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        let running = leaders()
        return String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ").contains {
            Int32($0).map { !running.contains($0) } ?? false
        }
    }

    /// flowrun's pid does not change: the path is built once.
    private static let childrenPath: String = {
        let me = getpid()
        return "/proc/\(me)/task/\(me)/children"
    }()
}

extension RunEngine {
    func makeProcessAttempt(for index: Int, script: Template, completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        let node = nodes[index]
        do throws(TemplateRenderError) {
            let rendered = try renderShell(script, for: index)
            // Only what a task sets on top of flowrun's own environment is built per task.
            var overrides: [(key: String, value: String)] = []
            for entry in plan.workflow.env { overrides.append((entry.name, try renderText(entry.value, for: index))) }
            for entry in node.task?.env ?? [] { overrides.append((entry.name, try renderText(entry.value, for: index))) }
            let outputPath = record.outputPath(for: node.name, attempt: node.attempt)
            overrides.append(("FLOWRUN_TASK", node.name))
            overrides.append(("FLOWRUN_RUN_ID", record.runID))
            overrides.append(("FLOWRUN_OUTPUT", outputPath))
            overrides.append(("FLOWRUN_ATTEMPT", String(node.attempt)))
            if let item = node.item { overrides.append(("FLOWRUN_ITEM", item)) }
            if let position = node.index { overrides.append(("FLOWRUN_INDEX", String(position))) }
            let marker = ProcessTreeMarker(runID: record.runID, serial: nextTreeSerial())
            overrides.append((ProcessTreeMarker.variable, marker.value(inherited: baseEnvironment[ProcessTreeMarker.variable])))
            var entries: [String]
            if overrides.contains(where: { baseEnvironment[$0.key] != nil }) {
                let replaced = Set(overrides.map(\.key))
                entries = baseEnvironment.filter { !replaced.contains($0.key) }.map { "\($0.key)=\($0.value)" }
            } else {
                entries = baseEnvironmentEntries
            }
            // Later entries win, as in the environment order FORMAT.md §8 gives.
            var seen = Set<String>()
            for override in overrides.reversed() where seen.insert(override.key).inserted {
                entries.append("\(override.key)=\(override.value)")
            }
            let setup = ProcessAttempt.Setup(
                shell: plan.workflow.shell, script: rendered, environment: entries,
                workingDirectory: try node.task?.cwd.map { (cwd: Template) throws(TemplateRenderError) -> String in try renderText(cwd, for: index) },
                logPath: record.logPath(for: node.name), outputPath: outputPath, tree: marker, grace: plan.workflow.killGrace)
            guard let reaper else {
                return FailedAttempt(reason: "cannot watch child processes: \(reaperProblem ?? "unknown error")", queue: queue, completion: completion)
            }
            return ProcessAttempt(
                setup, queue: queue, pump: pump, reaper: reaper, killer: killer,
                escapeesExist: { [weak self] in
                    guard let self else { return false }
                    return EscapedChildren.exist(besides: { Set(self.attempts.values.compactMap { ($0 as? ProcessAttempt)?.pid }) })
                },
                onProgress: { [weak self] percent in self?.progressed(index, percent) },
                onLine: streamsOutput ? { [reporters, name = node.name] line in
                    for reporter in reporters { reporter.output(task: name, line: line) }
                } : nil,
                completion: completion)
        } catch {
            return FailedAttempt(reason: error.description, queue: queue, completion: completion)
        }
    }

    func progressed(_ index: Int, _ percent: Int) {
        guard nodes[index].status == .running else { return }
        var progress = event(.taskProgress, index)
        progress.progress = percent
        emit(progress)
    }
}
