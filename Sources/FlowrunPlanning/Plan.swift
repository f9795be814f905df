package import FlowrunModel
package import FlowrunValues

/// What will run, in which order, under which limits and timers: the value
/// the execution stage consumes and `--dry-run` prints.
package struct Plan: Sendable {
    /// The workflow after command-line overrides (`--var`, `--max-parallel`, `--fail-fast`).
    package var workflow: Workflow
    /// Running tasks at once for the whole run, resolved (16 by default, `cpus`: the CPU count).
    package var maxParallel: Int
    /// The whole run's deadline (`timeout:` at the top), nil for none. The
    /// engine starts its run timer and bounds retry delays with this value.
    package var runTimeout: Duration?
    /// Main-phase steps (tasks, fan-outs, groups, joins), by stage then by position in the file.
    package var steps: [PlanStep]
    /// `finally` tasks, in the same order rules.
    package var finallySteps: [PlanStep]
    package var semaphores: [PlannedSemaphore]
    /// The targets selected (named on the command line, with `--only`, or
    /// by the file's `default:`); empty when everything runs.
    package var only: [String]
    /// Whether `only` came from the file's `default:`.
    package var targetsAreDefault = false
    /// Hides the values `secrets:` names in everything flowrun shows and
    /// stores; nil when the workflow has none (or all are unset).
    package var secretMasker: SecretMasker?
    /// What declared `resources:` are admitted against (SPEC §13), `auto` resolved.
    package var capacity = ResolvedCapacity(cpus: 1, memoryBytes: 1 << 30, cpusAreAuto: true, memoryIsAuto: true)

    /// Steps grouped by stage: everything in stage N can start once what it
    /// waits for in earlier stages has settled.
    package var stages: [[PlanStep]] {
        var stages: [[PlanStep]] = []
        for step in steps {
            while stages.count <= step.stage { stages.append([]) }
            stages[step.stage].append(step)
        }
        return stages.filter { !$0.isEmpty }
    }
}

/// One task, fan-out, group or join in the plan.
package struct PlanStep: Sendable {
    package var name: String
    /// A task's or fan-out's is its definition's (not held twice); a group's
    /// or join's is kept with its other fields.
    package var location: SourceLocation {
        get { details?.value.location ?? sharedTask?.value.location ?? SourceLocation(file: "", line: 0, column: 0) }
        set {
            guard newValue != sharedTask?.value.location || details?.value.location != nil else { return }
            changeDetails { $0.location = newValue }
        }
    }
    package var stage: Int
    /// What this step waits for: its own `needs` plus, for a group member, the group's.
    package var needs: [String]
    package var group: String?
    /// Joins that count this step as one of their members.
    package var joins: [String]
    /// For tasks and fan-outs: what it runs and under which policy (shared
    /// with the run's nodes, not copied).
    package var sharedTask: Shared<TaskDefinition>?
    package var task: TaskDefinition? { sharedTask?.value }
    /// For tasks and fan-outs: the slots it must hold all at once. The
    /// engine builds its slot demand from this, nothing else.
    package var limits: TaskLimits?
    /// The deadlines the engine starts for this step, defaults resolved
    /// (an http task's 5 minutes, a `finally` task's 5 minutes).
    package var timers: Timers
    /// After `timers`, in the padding its 65 bytes leave.
    package var kind: DependencyGraph.Kind
    /// What only groups, fan-outs, joins and members of a sequence have,
    /// behind one reference (nil for a plain task): inline it made every
    /// step of a 20,000-task plan 376 bytes; without it a step is 184.
    private var details: Shared<Details>?

    /// For fan-outs: the member count, nil until the run computes it.
    package var fanOutCount: Int? {
        get { details?.value.fanOutCount }
        set { if newValue != nil || details != nil { changeDetails { $0.fanOutCount = newValue } } }
    }
    package var fanOutSource: FanOutSource? {
        get { details?.value.fanOutSource }
        set { if newValue != nil || details != nil { changeDetails { $0.fanOutSource = newValue } } }
    }
    /// For fan-outs: the items (by index) that run when targets named some
    /// members only; nil runs every item.
    package var fanOutItems: [Int]? {
        get { details?.value.fanOutItems }
        set { if newValue != nil || details != nil { changeDetails { $0.fanOutItems = newValue } } }
    }
    /// The step that must settle (and not fail) before this one starts:
    /// for a member of a `sequential: true` group, the member planned just
    /// before it; for what a later member or a later command-line target
    /// adds, that member or target (`Planner+Order`).
    package var runsAfter: String? {
        get { details?.value.runsAfter }
        set { if newValue != nil || details != nil { changeDetails { $0.runsAfter = newValue } } }
    }
    /// Why `runsAfter` is set, as the plan and a skip's reason say it:
    /// `sequential group G`, `targets run in the order given`, ….
    package var runsAfterReason: String? {
        get { details?.value.runsAfterReason }
        set { if newValue != nil || details != nil { changeDetails { $0.runsAfterReason = newValue } } }
    }
    /// For groups: their own `when:` and `if:` (SPEC §15); nil for the default (`success`, no `if:`).
    package var groupWhen: RunCondition? {
        get { details?.value.groupWhen }
        set { if newValue != nil || details != nil { changeDetails { $0.groupWhen = newValue } } }
    }
    package var groupCondition: Located<Expression>? {
        get { details?.value.groupCondition }
        set { if newValue != nil || details != nil { changeDetails { $0.groupCondition = newValue } } }
    }
    /// For groups and their fan-outs: `sequential: true`.
    package var sequential: Bool {
        get { details?.value.sequential ?? false }
        set { if newValue || details != nil { changeDetails { $0.sequential = newValue } } }
    }
    /// For fan-outs: `split:` of a computed `foreach`.
    package var fanOutSplit: FanOutSplit? {
        get { details?.value.fanOutSplit }
        set { if newValue != nil || details != nil { changeDetails { $0.fanOutSplit = newValue } } }
    }
    /// For fan-outs and groups: a matrix's axes (the combinations are `fanOutSource`).
    package var fanOutAxes: [String]? {
        get { details?.value.fanOutAxes }
        set { if newValue != nil || details != nil { changeDetails { $0.fanOutAxes = newValue } } }
    }
    /// For groups: static members and the fan-out template; for joins: `wait`.
    package var members: [String] {
        get { details?.value.members ?? [] }
        set { if !newValue.isEmpty || details != nil { changeDetails { $0.members = newValue } } }
    }
    /// For groups: `concurrency`. For joins: the join itself.
    package var concurrency: Int? {
        get { details?.value.concurrency }
        set { if newValue != nil || details != nil { changeDetails { $0.concurrency = newValue } } }
    }
    package var join: JoinDefinition? {
        get { details?.value.join }
        set { if newValue != nil || details != nil { changeDetails { $0.join = newValue } } }
    }

    private struct Details: Sendable {
        var location: SourceLocation?
        var fanOutCount: Int?
        var fanOutSource: FanOutSource?
        var fanOutItems: [Int]?
        var runsAfter: String?
        var runsAfterReason: String?
        var groupWhen: RunCondition?
        var groupCondition: Located<Expression>?
        var sequential = false
        var fanOutSplit: FanOutSplit?
        var fanOutAxes: [String]?
        var members: [String] = []
        var concurrency: Int?
        var join: JoinDefinition?
    }

    /// A new `Details` with `change` applied: copies of this step may share the old one.
    private mutating func changeDetails(_ change: (inout Details) -> Void) {
        var changed = details?.value ?? Details()
        change(&changed)
        details = Shared(changed)
    }

    init(
        name: String, kind: DependencyGraph.Kind, location: SourceLocation, stage: Int, needs: [String], group: String?,
        joins: [String], sharedTask: Shared<TaskDefinition>?, limits: TaskLimits?, timers: Timers, fanOutCount: Int?,
        fanOutSource: FanOutSource?, members: [String], concurrency: Int?, join: JoinDefinition?
    ) {
        self.name = name
        self.kind = kind
        self.sharedTask = sharedTask
        self.stage = stage
        self.needs = needs
        self.group = group
        self.joins = joins
        self.limits = limits
        self.timers = timers
        self.fanOutCount = fanOutCount
        self.fanOutSource = fanOutSource
        self.members = members
        self.concurrency = concurrency
        self.join = join
        self.location = location
    }
}

/// The slots a task holds while running (all of them or none).
package struct TaskLimits: Sendable {
    package var runSlots: Int
    package var group: (name: String, concurrency: Int)?
    package var semaphores: [SemaphoreLimit]
}

/// One semaphore a task holds while running.
package struct SemaphoreLimit: Sendable {
    /// The pool's name; for a computed name, as written (`batch-${{ item.batch }}`).
    package var name: String
    package var weight: Int
    /// The pool's capacity; for a computed name, the largest it can take.
    package var capacity: Int
    /// The family that makes the pool (or the one family a computed name can take).
    package var family: String?
    /// The name is filled in when the task is ready to run.
    package var isComputed = false
    /// A computed name on a fan-out whose items the plan knows: the pools its members take.
    package var pools: [String]?
    /// Of `pools`, those no declared semaphore or family matches (their members fail).
    package var unmatched: [String] = []
    /// The declared names (literal or family) whose pools it may take: its users' line in the plan.
    package var sharedBy: [String] = []
}

/// The deadlines that can stop a step.
package struct Timers: Sendable {
    /// Per attempt of a task; a group's or join's own deadline.
    package var timeout: Duration?
    /// The deadline of the group a task belongs to.
    package var groupTimeout: Duration?
    /// The whole run's deadline (not for `finally`, which has its own budget).
    package var runTimeout: Duration?
}

/// A named pool or a family of pools, and who uses it.
package struct PlannedSemaphore: Sendable {
    package var name: String
    package var capacity: Int
    package var users: [String]
    /// `batch-*`: a pool of `capacity` per name it matches.
    package var isFamily = false
}

/// `capacity:` with `auto` read from this machine.
package struct ResolvedCapacity: Sendable {
    package var cpus: Double
    package var memoryBytes: UInt64
    package var cpusAreAuto: Bool
    package var memoryIsAuto: Bool

    package init(cpus: Double, memoryBytes: UInt64, cpusAreAuto: Bool, memoryIsAuto: Bool) {
        self.cpus = cpus
        self.memoryBytes = memoryBytes
        self.cpusAreAuto = cpusAreAuto
        self.memoryIsAuto = memoryIsAuto
    }
}
