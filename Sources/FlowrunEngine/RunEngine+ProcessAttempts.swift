import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunRecord
import FlowrunValues
/// Making the attempt that runs a task's `run:` script as a process tree.
extension RunEngine {
    /// `logName`: the log (and outputs file) is named so, not after the
    /// task: a service's `ready: {run: …}` probe writes beside its log.
    func makeProcessAttempt(for index: Int, script: Template, logName: String? = nil, completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        guard let reaper else {
            return FailedAttempt(reason: "cannot watch child processes: \(reaperProblem ?? "unknown error")", queue: queue, completion: completion)
        }
        let taskName = nodes[index].name
        let name = logName ?? taskName
        let attempt = nodes[index].attempt
        let task = nodes[index].definition  // the reference: its fields are read in place
        do throws(TemplateRenderError) {
            let rendered = try renderShell(script, for: index)
            // What a task sets on top of flowrun's own environment, in the order FORMAT.md §8 gives.
            var overrides: [(key: String, value: String)] = []
            overrides.reserveCapacity(plan.workflow.env.count + (task?.value.env.count ?? 0) + 7)
            for entry in plan.workflow.env { overrides.append((entry.name, try environmentValue(entry, for: index))) }
            for entry in task?.value.env ?? [] { overrides.append((entry.name, try environmentValue(entry, for: index))) }
            let outputFileName = record.outputFileName(index: index, name: name, attempt: attempt)
            overrides.append(("FLOWRUN_TASK", taskName))
            overrides.append(("FLOWRUN_RUN_ID", record.runID))
            overrides.append(("FLOWRUN_OUTPUT", record.outputPathForTask(outputFileName)))
            overrides.append(("FLOWRUN_ATTEMPT", String(attempt)))
            if let item = nodes[index].item { overrides.append(("FLOWRUN_ITEM", item.text)) }
            if let position = nodes[index].index { overrides.append(("FLOWRUN_INDEX", String(position))) }
            let marker = ProcessTreeMarker(runID: record.runID, serial: nextTreeSerial())
            overrides.append((ProcessTreeMarker.variable, marker.value(inherited: inheritedTreeMarker)))
            let environment = childEnvironment(overrides, ownKeysFrom: plan.workflow.env.count + (task?.value.env.count ?? 0))
            let launch = ScriptLaunch.of(shell: task?.value.shell, script: rendered)
            var setup = ProcessAttempt.Setup(
                shell: launch.program(shell: plan.workflow.shellCommand[0]), shellArguments: launch == .shellCommand ? Array(plan.workflow.shellCommand.dropFirst()) : [],
                script: rendered, launch: launch, environment: environment.entries, inherited: environment.inherited,
                workingDirectory: try task?.value.cwd.map { (cwd: Template) throws(TemplateRenderError) -> String in try renderText(cwd, for: index) },
                logPathForFiles: record.logPathForFiles(index: index, name: name),
                attempt: attempt,
                record: record.folder, outputFileName: outputFileName,
                tree: marker, grace: plan.workflow.killGrace)
            if let resources = resources(of: index), let runCgroups, runCgroups.version != nil {
                switch runCgroups.attempt(named: "\(index).\(attempt)", resources: resources) {
                case .success(let cgroup): setup.cgroup = cgroup
                case .failure(let problem): return FailedAttempt(reason: problem.text, queue: queue, completion: completion)
                }
            }
            // What `sh -c` would do with one simple command, done without it,
            // with the environment sh would pass on (no `cwd:`: PWD is flowrun's).
            if launch == .shellCommand, plan.workflow.shellCommand == ["/bin/sh"], task?.value.cwd == nil, !ScriptFile.isNeeded(for: rendered),
               let inherited = environment.inherited, !environment.entries.contains(where: { $0.hasPrefix("PWD=") }),
               let searchPath = environment.entries.last(where: { $0.hasPrefix("PATH=") }).map({ String($0.dropFirst(5)) }) ?? baseEnvironment["PATH"],
               let words = DirectCommand.words(of: rendered) {
                setup.directCommand = words
                setup.commandSearchPath = searchPath
                setup.inherited = inherited.asShellPassesIt
            }
            let executor = LocalProcessExecutor(
                queue: queue, pump: pump, reaper: reaper, killer: killer, escapeesExist: escapeesExist,
                descriptorsFit: descriptorsFit, waitForDescriptors: descriptorWait)
            return start(setup, on: executor, for: index, logName: logName, logPathForFiles: setup.logPathForFiles, completion: completion)
        } catch {
            return FailedAttempt(reason: error.description, queue: queue, completion: completion)
        }
    }

    /// What sees each line of a task's output, where it is read (the loop's
    /// thread; the engine's queue for a Slurm job): the reporters with
    /// `--stream`, and a service's `line` probe (local only: checked). Nil
    /// when nothing does (lines are then not even split).
    func lineHandler(for index: Int, streaming name: String?) -> (@Sendable (String, Bool) -> Void)? {
        var streamed: (@Sendable (String, Bool) -> Void)?
        if streamsOutput, let name {
            let reporters = reporters
            streamed = { line, isError in
                for reporter in reporters { reporter.output(task: name, line: line, isError: isError) }
            }
        }
        guard name != nil, let check = lineCheck(for: index) else { return streamed }
        let attempt = nodes[index].attempt
        let (loop, queue, engine) = (loop, queue, WeakEngine(engine: self))
        return { [streamed] line, isError in
            loop.preconditionOnLoopThread()
            streamed?(line, isError)
            // Matched on the check's own queue: a slow pattern never stalls the pump.
            check.offer(line) { queue.async { engine.engine?.serviceLineMatched(index, attempt: attempt) } }
        }
    }

    /// The engine, for a hop back onto its queue (where alone it is touched).
    struct WeakEngine: Sendable { weak var engine: RunEngine? }

    /// Whether one more running task's descriptors (two pipes and a log)
    /// fit under the limit, with room kept for flowrun's own (the events
    /// file, outputs files it reads, pidfds while it stops a tree). Looked
    /// at only when `max_parallel` tasks might not fit; with no task
    /// running, the answer is yes (the attempt then finds out by itself).
    func descriptorsFitAnotherTask() -> Bool {
        guard plan.maxParallel * 3 + 64 > Self.descriptorLimit else { return true }
        if descriptorBaseline == nil { descriptorBaseline = DescriptorLimit.openCount() }
        let running = attempts.values.count(where: Self.holdsDescriptors)
        return running == 0 || (descriptorBaseline ?? 0) + 8 + (running + 1) * 3 <= Self.descriptorLimit
    }

    /// A task whose end frees descriptors: a task process (its pipes and
    /// log), or an `http:` request in flight (its socket and log).
    static func holdsDescriptors(_ attempt: any TaskAttempt) -> Bool {
        if let process = attempt as? ProcessAttempt { return process.pid > 0 }
        return (attempt as? HTTPAttempt)?.holdsDescriptors ?? false
    }


    /// A task could not get its pipes or socket (EMFILE, ENFILE): `retry`
    /// runs when another task ends. False if no task process runs (none
    /// would free any soon).
    func waitForDescriptors(_ retry: @escaping () -> Void) -> Bool {
        // Not an `http:` request: one may hang for minutes on its socket; the run stops instead.
        // Nor a service: it runs until every other task has settled, so it frees none for them
        // (waiting on one hung the run for good, its dependent shown as started).
        guard attempts.contains(where: { index, attempt in ((attempt as? ProcessAttempt)?.pid ?? 0) > 0 && !isService(index) }) else { return false }
        descriptorWaiters.append(retry)
        return true
    }

    /// After a task's end: the tasks that waited for descriptors try again,
    /// on a later turn of the queue (the pump closes the ended task's read
    /// ends as its batch ends; a start that still finds none waits again).
    func retryDescriptorWaiters() {
        // The record's reserve first: what it gave back is taken again before any task's start.
        DescriptorReserve.refill()
        guard !descriptorWaiters.isEmpty else { return }
        queue.async { [self] in
            let waiters = descriptorWaiters
            descriptorWaiters = []
            for retry in waiters { retry() }
        }
    }

    /// An `env:` value filled in. The kernel refuses any one entry over
    /// 128 KiB; flowrun says which, before exec can say "Argument list too long".
    private func environmentValue(_ entry: EnvironmentEntry, for index: Int) throws(TemplateRenderError) -> String {
        let value = try renderText(entry.value, for: index)
        guard entry.name.utf8.count + value.utf8.count + 2 > ScriptFile.singleArgumentLimit else { return value }
        throw TemplateRenderError(
            location: entry.value.location,
            message: "env \(entry.name) is \(Self.kibibytes(value.utf8.count)); one environment variable can hold at most 128 KiB (the kernel's limit): pass it in the script or through a file")
    }

    /// `500.0 KiB`.
    static func kibibytes(_ size: Int) -> String {
        let tenths = (size * 10 + 512) / 1024
        return "\(tenths / 10).\(tenths % 10) KiB"
    }

    /// How many descriptors flowrun may have open (RLIMIT_NOFILE's soft
    /// limit, raised to the hard limit at start: see `ProcessStartup`).
    static let descriptorLimit = DescriptorLimit.current

    /// A task's entries on top of flowrun's environment, the last of each
    /// name winning. They share the run's inherited block unless one of them
    /// replaces an inherited variable; then the whole environment is built.
    /// The first `userKeys` entries come from `env:`; the rest are flowrun's
    /// own variables, which replace inherited ones only when flowrun itself
    /// runs inside a flowrun task.
    private func childEnvironment(_ overrides: [(key: String, value: String)], ownKeysFrom userKeys: Int) -> (entries: [String], inherited: InheritedEnvironment?) {
        var entries: [String] = []
        entries.reserveCapacity(overrides.count)
        if userKeys == 0 && !inheritedEnvironment.hasFlowrunVariables {
            // Only flowrun's own names, each once, none inherited: nothing to compare.
            for override in overrides { entries.append(Self.entry(override.key, override.value)) }
            return (entries, inheritedEnvironment)
        }
        var replacesInherited = false
        // A handful of entries: comparing them beats hashing them into a Set.
        for (position, override) in overrides.enumerated()
        where !overrides[(position + 1)...].contains(where: { $0.key == override.key }) {
            if position < userKeys || inheritedEnvironment.hasFlowrunVariables, inheritedEnvironment.names.contains(override.key) {
                replacesInherited = true
            }
            entries.append(Self.entry(override.key, override.value))
        }
        guard replacesInherited else { return (entries, inheritedEnvironment) }
        let replaced = Set(overrides.map(\.key))
        return (baseEnvironment.filter { !replaced.contains($0.key) }.map { "\($0.key)=\($0.value)" } + entries, nil)
    }

    /// "KEY=VALUE".
    private static func entry(_ key: String, _ value: String) -> String {
        String(joining: key, "=", value)
    }

    func progressed(_ index: Int, _ percent: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard nodes.contains(index), nodes[index].status == .running else { return }
        emit(event(.taskProgress(.init(task: nodes[index].name, percent: percent))))
    }
}
