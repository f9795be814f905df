import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
package import FlowrunPlanning
package import FlowrunEvents
package import FlowrunRecord

/// Runs a plan: the Dispatch core.
///
/// Every piece of run state lives on one serial queue (`queue`): node
/// statuses, slot accounting, timers and attempts. Nothing blocks on it and
/// no thread is parked per waiting task: a task that waits for its needs is a
/// counter, one that waits for slots is an entry in `SlotPool`, one that
/// sleeps or backs off is a `DispatchSourceTimer`, one that runs a process
/// is a pid in the reaper's table plus a pipe the `OutputPump` reads.
/// The `EventLoop`'s thread, where the pump reads, also reaps exited
/// children (`ChildExitWatch`), and runs the engine's step for a finished
/// task inline (`queue.sync`), spawning the next one without waking another
/// thread.
package final class RunEngine: @unchecked Sendable {
    // @unchecked: all mutable state is confined to `queue` once `init`
    // returns: timers, `ImmediateWork` and the event loop's batches run
    // there by construction; the ways back in from elsewhere (`emit`, an
    // attempt's end in `attemptFinished`, `progressed`, and each attempt's
    // own entries) check it with `dispatchPrecondition` (ThreadRuleTests).
    let queue = DispatchQueue(label: "flowrun.engine")
    /// Attempts that end as they start complete through this, many per turn of `queue`.
    private(set) lazy var immediateWork = ImmediateWork(queue: queue)
    /// Its steps are emptied once the nodes are built from them (`buildNodes`).
    private(set) var plan: Plan
    /// Members of the fan-outs whose items the plan knows, and the groups
    /// whose fan-out only the run can size (run_started's counts).
    private var knownFanOutMembers = 0
    private var groupsSizedAtRunTime: [String] = []
    /// The run's record and reporters; `flowrun watch` gives each of its runs new ones (RunEngine+Watch.swift).
    var record: RunRecord
    var reporters: [any RunReporter]
    /// CLOCK_MONOTONIC at the start, in seconds (of this run, under `watch`):
    /// when its record was made, the instant its id names (`RunStart`).
    var startSeconds: Double
    /// The wall-clock time then (CLOCK_REALTIME, the id's instant): an
    /// event's time is this plus its `elapsed`, one clock read per event
    /// instead of two.
    var startWallSeconds: Double
    /// Set for `flowrun watch`: the watch between runs.
    var watchState: WatchState?
    /// The watch could not keep watching (a limit, a record): the run ends, exit 1.
    var watchFailed = false

    /// When each task runs: nodes, counters, slots, deadlines, joins,
    /// skips (Scheduler/). The engine drives it and owns how tasks run.
    var scheduler: Scheduler
    /// The scheduler's nodes, in place: read and changed through the
    /// coroutines without a copy of the array (a copy-on-write copy of
    /// every node would be made if this were `get`/`set`).
    var nodes: RunNodes {
        @inline(__always) _read { yield scheduler.nodes }
        @inline(__always) _modify { yield &scheduler.nodes }
    }
    /// Each running (or finished) fan-out's feed and counts, by the group's node index.
    var fanOutProgress = ByGroupIndex<FanOutProgress>()
    /// Names made by fan-outs named other than `GROUP[INDEX]` (see RunEngine+MemberNames.swift).
    var madeMemberNames: [MadeMemberNames] = []
    /// Groups whose members' stashes something reads (`groups.G.results`, a
    /// join over the group): their members are kept after they settle.
    var groupsWithMembersRead: Set<String> = []
    /// `sequential: true` groups, by node index: jobs in GitHub's sense,
    /// where members skipped by their own `if:` do not skip the group.
    var sequentialGroups: Set<Int> = []
    /// Groups with their own `when:` or `if:`, by node index (RunEngine+GroupCondition.swift).
    var groupConditions: [Int: (when: RunCondition, condition: Located<Expression>?)] = [:]
    /// `PlanStep.runsAfterReason` by node index, where the plan gave one
    /// (the steps are gone once the nodes are built).
    var runsAfterReasons: [Int: String] = [:]
    /// The tasks that compute a `{sh: …}` var (`vars.NAME`), by node index: the var's position in `plan.workflow.vars`.
    var computedVariables: [Int: Int] = [:]
    /// Fan-out members settled so far, by status, and whether one failed
    /// (not allowed to): members are let go, these stay.
    var settledMemberCounts: [TaskStatus: Int] = [:]
    var settledMemberFailed = false
    /// Settled fan-out members' summary rows, spilled to disk as they settle.
    var summaryRows = RecordSpill()
    var indexByName: [String: Int] = [:]
    /// The scheduler's slot pool, in place.
    var pool: SlotPool {
        @inline(__always) _read { yield scheduler.pool }
        @inline(__always) _modify { yield &scheduler.pool }
    }
    /// Resource 0 of the pool: the run's `max_parallel` slots.
    static let runSlots = 0
    /// Resources 1 and 2: declared CPUs and memory against `capacity` (`ResourceUnits`).
    static let cpuResource = 1
    static let memoryResource = 2
    /// A task's resources after `retry_resources` grew them (by node index); absent: as declared.
    var grownResources: [Int: ResourceRequest] = [:]
    /// The run's cgroups, made when a task declares `resources:` and flowrun
    /// runs real processes; nil otherwise (`RunCgroups`). Set in `init`, read-only after.
    let runCgroups: RunCgroups?
    /// Pool resources by group and semaphore name (a family's pools are
    /// added as tasks first name them: `semaphoreResource(named:)`).
    let resourceOfGroup: [String: Int]
    var resourceOfSemaphore: [String: Int] { scheduler.resourceOfSemaphore }
    /// A group's fan-out as its plan step gives it: what each member runs,
    /// over which items, holding which slots, under which deadline. A class:
    /// read for every member made, and a struct this size was copied out of
    /// `fanOuts` (every field retained) at each read.
    final class FanOut {
        let template: Shared<TaskDefinition>
        let source: FanOutSource
        let demand: SlotPool.Demand
        let timeout: Duration?
        /// The items that run (by index) when targets named some members only; nil: all.
        let items: Set<Int>?
        /// In a `sequential: true` group: the member the first item runs after, if any.
        let runsAfter: Int?
        let sequential: Bool
        let split: FanOutSplit?
        let axes: [String]?
        /// Matrix combinations named `GROUP[INDEX]` (`MemberNaming.indexNamed`).
        let indexNamed: Set<Int>

        init(template: Shared<TaskDefinition>, source: FanOutSource, demand: SlotPool.Demand, timeout: Duration?,
             items: Set<Int>?, runsAfter: Int?, sequential: Bool, split: FanOutSplit?, axes: [String]?) {
            self.template = template
            self.source = source
            self.demand = demand
            self.timeout = timeout
            self.items = items
            self.runsAfter = runsAfter
            self.sequential = sequential
            self.split = split
            self.axes = axes
            indexNamed = template.value.nameTemplate == nil ? MemberNaming.indexNamed(source, axes: axes) : []
        }
    }

    /// Each group's fan-out, by the group's node index.
    var fanOuts = ByGroupIndex<FanOut>()
    /// `limitsJSON` of each demand met so far.
    var limitsTexts: [SlotPool.Demand: String] = [:]
    /// Groups one of whose members started: the rest leave the group's needs out of `task_started`.
    var groupsWithAStartedMember: Set<Int> = []

    var attempts: [Int: any TaskAttempt] = [:]
    /// Services started and not yet ended, by node index (RunEngine+Services.swift).
    var services: [Int: ServiceRun] = [:]
    /// Services waiting for their port's closed connections to go (RunEngine+ClosedConnections.swift).
    var closedConnectionWaits: [Int: ClosedConnectionsWait] = [:]
    /// How many TIME_WAIT connections a port has, and how long a service waits for them at most (a test fakes both).
    var closedConnectionsOnPort: (Int) -> Int = LocalListeners.closedConnections(port:)
    var closedConnectionsGiveUpAfter = ClosedConnectionsWait.giveUpAfter
    /// `ready: {run: …}` probes running now.
    var probeProcesses: [ObjectIdentifier: any TaskAttempt] = [:]
    /// Slurm's commands, found on PATH at run start when a task may run on Slurm.
    package var slurmTools: SlurmTools?
    /// The run's link to Slurm, made at the first task on it (RunEngine+Slurm.swift).
    var slurmSession: SlurmSession?
    /// Why no session could be made (every task on Slurm then fails with it).
    var slurmProblem: String?
    /// The one thread that waits for pipes, exits and signals, and runs the engine's batches.
    let loop: EventLoop
    /// Reads every task's output on the loop's thread.
    let pump: OutputPump
    /// Reaps exited children on the loop's thread; nil with `reaperProblem`, or for fake attempts.
    var childExits: ChildExitWatch?
    let killer = ProcessTreeKiller()
    /// Created when the run starts; nil (with the reason) if children cannot be watched.
    var reaper: ChildReaper?
    var reaperProblem: String?
    /// flowrun's own environment, the base of every task's, and the same as
    /// the C strings a child receives.
    let baseEnvironment: [String: String]
    let inheritedEnvironment: InheritedEnvironment
    /// The `FLOWRUN_TREE` flowrun itself inherited (it runs inside a task), if any.
    let inheritedTreeMarker: String?
    /// Whether flowrun has children that are not running task shells: one
    /// closure for every attempt, not one each.
    private(set) lazy var escapeesExist: () -> Bool = { [weak self] in
        guard let self else { return false }
        return EscapedChildren.exist(besides: {
            Set((Array(self.attempts.values) + Array(self.probeProcesses.values)).compactMap { ($0 as? ProcessAttempt)?.pid })
        })
    }
    private var treeSerial = 0
    /// What a timer is for: a node's deadline or retry delay, or the run's deadline.
    typealias TimerKey = Deadlines.Key
    /// The timers that fire the scheduler's deadlines (`scheduler.deadlines`
    /// says when each falls due; one timer per armed deadline).
    var timers: [TimerKey: any DispatchSourceTimer] = [:]
    /// Since when flowrun and its tasks are stopped (Ctrl-Z), or nil.
    var suspendedAt: Double?
    /// Tasks that wait for descriptors to come free, run when a task ends.
    var descriptorWaiters: [() -> Void] = []
    /// Descriptors flowrun had open before its first task (measured only
    /// under a descriptor limit too low for `max_parallel` tasks).
    var descriptorBaseline: Int?
    /// `descriptorsFitAnotherTask` and `waitForDescriptors` for every
    /// attempt: one closure each, not one per attempt.
    private(set) lazy var descriptorsFit: () -> Bool = { [unowned self] in descriptorsFitAnotherTask() }
    private(set) lazy var descriptorWait: (@escaping () -> Void) -> Bool = { [unowned self] retry in waitForDescriptors(retry) }
    /// Events of the current pump batch not yet reported (see `emit`); the
    /// buffer and the closure that delivers it are kept between batches.
    private var deferredEvents: [RunEvent] = []
    private var defersEvents = false
    private lazy var deliverDeferredAtBatchEnd: () -> Void = { [weak self] in self?.deliverDeferredEvents() }
    /// The scheduler's phase counters and stopping state (Scheduler.swift), by their old names.
    var unsettledMain: Int {
        get { scheduler.unsettledMain }
        set { scheduler.unsettledMain = newValue }
    }
    var unsettledFinally: Int {
        get { scheduler.unsettledFinally }
        set { scheduler.unsettledFinally = newValue }
    }
    var finallyStarted: Bool {
        get { scheduler.finallyStarted }
        set { scheduler.finallyStarted = newValue }
    }
    var stopping: CancelReason? {
        get { scheduler.stopping }
        set { scheduler.stopping = newValue }
    }
    /// A second signal: everything is killed at once, `finally` included.
    var killingEverything: Bool {
        get { scheduler.killingEverything }
        set { scheduler.killingEverything = newValue }
    }
    var stopSignal: Int32?
    /// Set when a task found no descriptor left with nothing running to
    /// free one: what stderr says at the end (`DescriptorLimit.exhausted`).
    var shortOfDescriptors: String?
    /// One hash of every task's identity, for a killed engine's record (`factsForResume`).
    var planIdentity = ""
    /// The signal that killed flowrun's supervisor (the pid the shell knows):
    /// the run ends `killed`, exit 128+N.
    var killedBy: Int32?
    var finished = false
    /// The exit code, worked out once when the run has finished.
    var finalExitCode: Int32?
    let done = DispatchSemaphore(value: 0)
    /// The run starts no process (every task up to date, the supervisor
    /// split skipped): the calling thread runs the loop and the engine's
    /// turns, and no thread is made for a run that waits for nothing.
    let runsOnCallingThread: Bool
    /// Set with `done` (any thread), for the calling thread's loop to stop.
    let ended = Atomic<Bool>(false)

    /// Stashes to restore (`resume`) and the incremental state: set before `run()`.
    package var reuse = TaskReuse()
    /// Each step's identity (`TaskIdentity`), worked out when first needed
    /// (an incremental task, the summary); `resume` hands in the ones it has.
    package lazy var identities: [String: TaskIdentity] = TaskIdentities.compute(for: plan)
    /// The fan-out templates' identities with their hashes worked out, by template name, made as members need them.
    var fanOutIdentities: [String: FanOutIdentity] = [:]
    /// Members' identities the check before the run made, by node: found up to date, never made twice.
    var checkedMemberIdentities: [Int: TaskIdentity] = [:]

    /// `--stream`: task output goes to the reporters line by line as it arrives.
    let streamsOutput: Bool

    /// Makes the attempt that runs task `index` once. The engine's own
    /// (`makeAttempt`: a process, a request, a sleep) unless a unit test
    /// injects one (see `init(plan:record:reporters:attemptFactory:)`).
    typealias AttemptFactory = (_ engine: RunEngine, _ index: Int, _ completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt

    /// The test seam: nil in flowrun itself.
    let attemptFactory: AttemptFactory?
    /// Whether this engine owns flowrun's process: it reaps children, takes
    /// signals, watches the supervisor and sweeps descendants at the end.
    /// False only with an injected attempt factory, which starts no process:
    /// a unit test's process (and its other tests' children) stays its own.
    var ownsProcess: Bool { attemptFactory == nil }

    /// `identities`: the steps' identities when the caller has them already
    /// (the launcher's up-to-date check, `resume`); else worked out here.
    package convenience init(
        plan: Plan, record: RunRecord, reporters: [any RunReporter], streamsOutput: Bool = false, identities: [String: TaskIdentity]? = nil
    ) {
        self.init(plan: plan, record: record, reporters: reporters, streamsOutput: streamsOutput, attemptFactory: nil, identities: identities)
    }

    /// An engine whose attempts `attemptFactory` makes (a fake that starts no
    /// process): for unit tests of scheduling. It reaps no children, handles
    /// no signals and kills nothing at the end.
    init(
        plan: Plan, record: RunRecord, reporters: [any RunReporter], streamsOutput: Bool = false, attemptFactory: AttemptFactory?,
        identities: [String: TaskIdentity]? = nil
    ) {
        self.attemptFactory = attemptFactory
        self.plan = plan
        self.streamsOutput = streamsOutput
        self.record = record
        self.reporters = [record] + reporters
        // The run starts when its id says (`RunStart`): `run_started`'s time minus its elapsed is the id's instant.
        startSeconds = record.start.monotonicSeconds
        startWallSeconds = record.start.wallSeconds
        let (pool, semaphores, groups) = Self.slotPool(for: plan)
        resourceOfGroup = groups
        scheduler = Scheduler(
            pool: pool, semaphores: semaphores, semaphoreTable: SemaphoreTable(plan.workflow.semaphores),
            clock: MonotonicSchedulerClock(), runTimeout: plan.runTimeout, queue: queue)
        // A task with resources runs in a cgroup: the run's folder is made
        // now (or why it cannot be, said at the start); none without them.
        let declaresResources = (plan.steps + plan.finallySteps).contains { step in
            step.sharedTask.map { $0.value.resources != nil && plan.workflow.executor(of: $0.value) == .local } ?? false
        }
        // A run that skipped the supervisor split starts no task (every one up to date): no
        // folder, which only the supervisor would have removed had this process been killed.
        runCgroups = attemptFactory == nil && declaresResources && !Supervisor.skippedAsNoOp ? RunCgroups(runID: record.runID) : nil
        baseEnvironment = Self.currentEnvironment()
        inheritedEnvironment = InheritedEnvironment(baseEnvironment)
        inheritedTreeMarker = baseEnvironment[ProcessTreeMarker.variable]
        // First, on this (the main) thread, before any Dispatch thread exists:
        // the reaper blocks SIGCHLD here so every later thread inherits that.
        // The event loop's thread, started next, inherits that block too: it reaps.
        var reaper: ChildReaper?
        if attemptFactory == nil {
            do {
                reaper = try ChildReaper()
            } catch {
                reaperProblem = error.description
            }
        }
        runsOnCallingThread = attemptFactory == nil && Supervisor.skippedAsNoOp
        loop = EventLoop(engineQueue: queue, startsThread: !runsOnCallingThread)
        pump = OutputPump(loop: loop)
        Self.attach(record, queue: queue, loop: loop)
        if let reaper {
            do {
                childExits = try ChildExitWatch(reaper: reaper, loop: loop, outputs: pump)
                self.reaper = reaper
            } catch {
                reaperProblem = error.description
            }
        }
        // Each task's identity (recorded for `resume`, compared for
        // `up_to_date`) is made from the steps, so before they go; and
        // before the nodes, so its scratch tables are gone when they are built.
        if let identities { self.identities = identities } else { _ = self.identities }
        // While the steps are here: their order is the plan identity's (see `factsForResume`).
        planIdentity = TaskIdentities.planIdentity(self.identities, steps: (self.plan.steps + self.plan.finallySteps).map(\.name))
        buildNodes()
        // Fan-outs' member counts for run_started, read from the steps while they are here.
        for step in self.plan.steps where step.kind == .fanOut {
            if let count = step.fanOutCount { knownFanOutMembers += count } else if let group = step.group { groupsSizedAtRunTime.append(group) }
        }
        // The nodes now hold what the run reads of each step (definitions
        // shared); the steps themselves (~300 bytes a task) are not read again.
        self.plan.steps = []
        self.plan.finallySteps = []
    }

    /// How a record writes its events: gathered per engine step, starts held back a moment.
    static func attach(_ record: RunRecord, queue: DispatchQueue, loop: EventLoop) {
        record.writesEvents { [queue, loop] write in
            if !loop.runAtBatchEnd(write) { queue.async(execute: write) }
        }
        record.holdsStarts { [queue] seconds, work in queue.asyncAfter(deadline: .now() + seconds, execute: work) }
    }

    /// Seconds since the run started. Read a few times per task: straight
    /// from clock_gettime, without ContinuousClock's 128-bit arithmetic.
    var elapsed: Double { Self.monotonicSeconds() - startSeconds }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Runs to the end and returns how it went. Blocks the calling thread (not a Dispatch worker).
    package func run() -> RunOutcome {
        precondition(Supervisor.isSplitDecided, "a run put the supervisor split off and never decided it (Supervisor.splitNow)")
        if ownsProcess { installSignalHandlers() }
        // The supervisor gets the record's events; its watch starts with the first attempt.
        if runsOnCallingThread {
            if ownsProcess { watchSupervisor() }
            loop.runHere(first: { self.begin() }, until: { self.ended.load(ordering: .acquiring) })
        } else {
            queue.async { self.begin() }
            if ownsProcess { watchSupervisor() }
        }
        done.wait()
        // Nothing of the run may outlive flowrun, not even a daemon that left
        // its group, cleared its environment or changed its user: every
        // descendant goes (orphans re-parent to flowrun, a child subreaper).
        // A run that started no process (every task up to date) has nothing
        // to find: the sweep reads every /proc/PID, milliseconds on a busy host.
        if ownsProcess && reaper?.hasLaunched != false {
            // The sentinel's work ends with the run. With it gone, an engine
            // that has no child left has no descendant at all (it is a child
            // subreaper: every orphan of a task came back to it), and the
            // sweep would find nothing; a child left (a task's leftover, a
            // zombie not yet reaped) and it runs.
            Supervisor.endSentinel()
            if reaper == nil || ChildReaper.hasAnyChild {
                ProcessTreeKiller.killAll(runID: record.runID, includingEveryDescendant: true)
            }
        }
        runCgroups?.removeAll()
        return RunOutcome(exitCode: queue.sync { finalExitCode ?? exitCode() }, recordDirectory: record.directory)
    }

    func nextTreeSerial() -> Int {
        treeSerial += 1
        return treeSerial
    }

    private static func currentEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        // Split at the first "=" byte: `firstIndex(of:)` on a String walks
        // grapheme clusters, 9,000 instructions a variable at every start.
        while let entry = pointer.pointee {
            if let equals = strchr(entry, Int32(UInt8(ascii: "="))) {
                let name = UnsafeRawBufferPointer(start: entry, count: equals - entry)
                result[String(decoding: name, as: UTF8.self)] = String(cString: equals + 1)
            }
            pointer += 1
        }
        return result
    }

    /// Reports an event. In a batch of the pump's (a task's end, the next
    /// one's start) the reporters get the batch's events at its end, in
    /// order: the next task is spawned before they are formatted.
    func emit(_ event: RunEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        let event = shown(event)  // secrets masked once, for every reporter
        if defersEvents {
            deferredEvents.append(event)
        } else if loop.runAtBatchEnd(deliverDeferredAtBatchEnd) {
            defersEvents = true
            deferredEvents.append(event)
        } else {
            for reporter in reporters { reporter.report(event) }
        }
    }

    /// Hands the reporters what `emit` held back.
    func deliverDeferredEvents() {
        guard defersEvents else { return }
        defersEvents = false
        for event in deferredEvents {
            for reporter in reporters { reporter.report(event) }
        }
        deferredEvents.removeAll(keepingCapacity: true)
    }

    /// `payload` stamped now: the run's start plus `elapsed`, as a reader of `events.jsonl` computes it.
    func event(_ payload: RunEvent.Payload) -> RunEvent {
        let now = elapsed
        return RunEvent(elapsed: now, timestamp: startWallSeconds + now, payload)
    }

    private func begin() {
        if watchState != nil { startWatching() }
        let started = RunEvent.RunStarted(
            runID: record.runID, workflow: plan.workflow.name, path: record.directory,
            maxParallel: pool.capacity(of: Self.runSlots),
            // Members of fan-outs whose items are known count too (the live view's total, the start line).
            members: nodes.indices.count { nodes[$0].kind == .task } + knownFanOutMembers,
            timeoutSeconds: plan.runTimeout?.seconds, resumedFrom: reuse.resumedFrom,
            sizedAtRunTime: groupsSizedAtRunTime.isEmpty ? nil : groupsSizedAtRunTime)
        emit(event(.runStarted(started)))
        if let problem = runCgroups?.notEnforced {
            // Once, at the start: the limits are promises only here.
            _ = writeAll(STDERR_FILENO, "flowrun: resources are admitted but not enforced: \(problem)\n")
        }
        if let timeout = plan.runTimeout {
            startTimer(.run, after: timeout) { $0.stop(because: .runTimeout) }
        }
        readyRoots(scheduler.roots()[...])
    }

    /// Queues the nodes that need nothing, a few hundred per turn of the
    /// engine's queue: the first tasks' ends are handled in between, not
    /// after thousands of roots were queued (each is a `task_waiting` event).
    private func readyRoots(_ roots: ArraySlice<Int>) {
        for index in roots.prefix(256) { needsSettled(index) }
        let rest = roots.dropFirst(256)
        guard rest.isEmpty else {
            queue.async { self.readyRoots(rest) }
            return
        }
        settleEmptyJoins()
        finishIfDone()
    }

    /// Called when the main phase and `finally` have both settled.
    func finishIfDone() {
        if watchState != nil, finishWatchIfStopped() { return }
        guard !finished else { return }
        if scheduler.finallyIsDue {
            startFinally()
            // A `finally` task settled as it started (up to date, or not run) ended the run from
            // inside that call: this one must not end it a second time (a second run_finished).
            guard !finished else { return }
        }
        guard scheduler.allSettled else { return }
        // Services last: `finally` may still have used them. Each one's end calls here again.
        // Under `watch` they keep running into the next run, until the watch is stopped.
        if watchState == nil || (stopping != nil && !stoppedThisRunOnly), stopServices() { return }
        finished = true
        for timer in timers.values { timer.cancel() }
        timers.removeAll()
        scheduler.deadlines.disarmAll()
        var code = exitCode()
        // A record that could not be written fails the run (unless a signal or timeout already did).
        if code == 0 && record.failure != nil { code = 1 }
        finalExitCode = code
        var finishedEvent = RunEvent.RunFinished(
            runID: record.runID, duration: elapsed, counts: statusCounts(), exitCode: Int(code), path: record.directory)
        deliverDeferredEvents()  // what came before, to every reporter, in order
        // The record first, written now (so that the summary knows whether events.jsonl is whole),
        // then the console: a run that wrote nothing before its end (every task up to date: its
        // events are one write) learns only now that the record cannot be written, and its last
        // console line must say the exit code it ends with, not 0.
        let finished = event(.runFinished(finishedEvent))
        record.report(shown(finished))
        record.writeEventsNow()
        if finalExitCode == 0 && record.failure != nil {
            finalExitCode = 1
            finishedEvent.exitCode = 1
        }
        let told = shown(RunEvent(elapsed: finished.elapsed, timestamp: finished.timestamp, .runFinished(finishedEvent)))
        for reporter in reporters where reporter !== record { reporter.report(told) }
        record.writeSummary { writeSummary(into: &$0) }
        if finalExitCode == 0 && record.failure != nil { finalExitCode = 1 }
        for reporter in reporters { reporter.finish() }
        if let failure = record.failure {
            _ = writeAll(STDERR_FILENO, "flowrun: the run record is incomplete: \(failure)\n")  // stderr: nowhere else to say it
        }
        if let shortOfDescriptors { _ = writeAll(STDERR_FILENO, shortOfDescriptors + "\n") }
        if watchState != nil, stopping == nil || stoppedThisRunOnly, killedBy == nil {
            // `fail_fast` (or the run's timeout) stopped this run, not the watch: the next change runs again.
            stopping = nil
            runEndedUnderWatch()
            return
        }
        ended.store(true, ordering: .releasing)
        done.signal()
        // A turn on a Dispatch thread (a fan-out's roots past the first 256) ends it: the loop looks.
        if runsOnCallingThread { loop.wake() }
    }

    /// Under `flowrun watch`: what stops one run (`fail_fast`, the run's timeout), not the watch
    /// (Ctrl-C, a problem with the watch). Its services keep running, as after any run.
    var stoppedThisRunOnly: Bool {
        watchState != nil && stopSignal == nil && killedBy == nil && !watchFailed && (stopping == .failFast || stopping == .runTimeout)
    }

    func statusCounts() -> [(status: TaskStatus, count: Int)] {
        // By index: copying 100,000 nodes to count them showed in peak memory.
        var counts: [TaskStatus: Int] = [:]
        for index in nodes.indices where nodes[index].kind == .task { counts[nodes[index].status, default: 0] += 1 }
        for (status, count) in settledMemberCounts { counts[status, default: 0] += count }
        return TaskStatus.allCases.filter(\.isFinal).compactMap { status in counts[status].map { (status, $0) } }
    }

    /// SPEC §7: 128+N for a signal (flowrun killed by one too), 124 for the run's timeout, 1 when anything
    /// failed that was not allowed to, else 0.
    func exitCode() -> Int32 {
        // The shell saw the supervisor die of it: the record says the same.
        if let killedBy { return 128 + killedBy }
        if watchFailed { return 1 }
        if let stopSignal { return 128 + stopSignal }
        if stopping == .runTimeout { return 124 }
        // By index: copying every node to look at it showed at 100,000 tasks.
        return settledMemberFailed || nodes.indices.contains(where: scheduler.countsAsFailure) ? 1 : 0
    }

    // MARK: - Timers

    /// Arms the scheduler's deadline `key` and a one-shot timer on the
    /// engine queue that fires it, replaced if `key` is reused.
    func startTimer(_ key: TimerKey, after delay: Duration, _ action: @escaping (RunEngine) -> Void) {
        timers[key]?.cancel()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .nanoseconds(delay.nanoseconds))
        scheduler.deadlines.arm(key, after: delay, now: scheduler.clock.now)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            // A source must be cancelled before its last reference goes, even after it fired.
            self.timers.removeValue(forKey: key)?.cancel()
            self.scheduler.deadlines.disarm(key)
            action(self)
        }
        timers[key] = timer
        timer.resume()
    }

    func cancelTimer(_ key: TimerKey) {
        // Twice per task, and most runs have no timers: no key hashed for nothing.
        guard !timers.isEmpty else { return }
        guard let timer = timers.removeValue(forKey: key) else { return }
        timer.cancel()
        scheduler.deadlines.disarm(key)
    }

    // MARK: - Signals

    /// SIGINT, SIGTERM and SIGHUP stop the run (a second one kills
    /// everything); SIGTSTP stops flowrun with its tasks and SIGCONT resumes
    /// them. They come through the pump, like child exits. A signal flowrun's
    /// caller ignored stays ignored (`nohup flowrun …`): SIGTSTP ignored
    /// takes SIGCONT's handling with it.
    private func installSignalHandlers() {
        var signals = [SIGINT, SIGTERM, SIGHUP].filter { !ProcessStartup.callerIgnores($0) }
        if !ProcessStartup.callerIgnores(SIGTSTP) { signals += [SIGTSTP, SIGCONT] }
        do {
            try SignalForwarding.forward(signals, through: loop) { [weak self] signalNumber in
                self?.received(signal: signalNumber)
            }
        } catch {
            // sigaction fails only for an invalid signal; say so rather than crash.
            _ = writeAll(STDERR_FILENO, "flowrun: cannot handle signals: \(error)\n")  // stderr: nowhere else to say it
        }
    }

    private func received(signal signalNumber: Int32) {
        switch signalNumber {
        case SIGTSTP:
            suspend()
        case SIGCONT:
            resumeAfterSuspension()
        default:
            if stopSignal == nil {
                // The first signal. If fail_fast or the run's timeout is already
                // stopping the run, it only decides the exit code; finally still runs.
                stopSignal = signalNumber
                if stopping == nil { stop(because: .signal) }
            } else if !killingEverything {
                killEverything()
            }
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at `Int.max` (about 292 years) rather than trapping.
    var nanoseconds: Int {
        guard self > .zero else { return 0 }
        let (product, overflow) = Int(clamping: components.seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return Int.max }
        let (sum, sumOverflow) = product.addingReportingOverflow(Int(components.attoseconds / 1_000_000_000))
        return sumOverflow ? Int.max : sum
    }
}

extension RunEngine {
    /// A computed var's value, once its task succeeded (RunEngine+ComputedVariables.swift):
    /// here, where `plan` may be changed.
    func setVariable(at position: Int, to value: String) {
        plan.workflow.vars[position].value = value
    }
}
