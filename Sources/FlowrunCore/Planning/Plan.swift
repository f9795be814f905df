/// What will run, in which order, under which limits and timers: the value
/// the execution stage consumes and `--dry-run` prints.
public struct Plan: Sendable {
    /// The workflow after command-line overrides (`--var`, `--max-parallel`, `--fail-fast`).
    public var workflow: Workflow
    /// Running tasks at once for the whole run, resolved (the CPU count by default).
    public var maxParallel: Int
    /// The whole run's deadline (`timeout:` at the top), nil for none. The
    /// engine starts its run timer and bounds retry delays with this value.
    public var runTimeout: Duration?
    /// Main-phase steps (tasks, fan-outs, groups, joins), by stage then by position in the file.
    public var steps: [PlanStep]
    /// `finally` tasks, in the same order rules.
    public var finallySteps: [PlanStep]
    public var semaphores: [PlannedSemaphore]
    /// The names `--only` selected; empty when everything runs.
    public var only: [String]
    /// Hides the values `secrets:` names in everything flowrun shows and
    /// stores; nil when the workflow has none (or all are unset).
    public var secretMasker: SecretMasker?

    /// Steps grouped by stage: everything in stage N can start once what it
    /// waits for in earlier stages has settled.
    public var stages: [[PlanStep]] {
        var stages: [[PlanStep]] = []
        for step in steps {
            while stages.count <= step.stage { stages.append([]) }
            stages[step.stage].append(step)
        }
        return stages.filter { !$0.isEmpty }
    }
}

/// One task, fan-out, group or join in the plan.
public struct PlanStep: Sendable {
    public var name: String
    public var kind: DependencyGraph.Kind
    public var location: SourceLocation
    public var stage: Int
    /// What this step waits for: its own `needs` plus, for a group member, the group's.
    public var needs: [String]
    public var group: String?
    /// Joins that count this step as one of their members.
    public var joins: [String]
    /// For tasks and fan-outs: what it runs and under which policy (shared
    /// with the run's nodes, not copied).
    var sharedTask: Shared<TaskDefinition>?
    public var task: TaskDefinition? { sharedTask?.value }
    /// For tasks and fan-outs: the slots it must hold all at once. The
    /// engine builds its slot demand from this, nothing else.
    public var limits: TaskLimits?
    /// The deadlines the engine starts for this step, defaults resolved
    /// (an http task's 5 minutes, a `finally` task's 5 minutes).
    public var timers: Timers
    /// For fan-outs: the member count, nil until the run computes it.
    public var fanOutCount: Int?
    public var fanOutSource: FanOutSource?
    /// For fan-outs: `split:` of a computed `foreach`.
    public var fanOutSplit: FanOutSplit? = nil
    /// For fan-outs and groups: a matrix's axes (the combinations are `fanOutSource`).
    public var fanOutAxes: [String]? = nil
    /// For groups: static members and the fan-out template; for joins: `wait`.
    public var members: [String]
    /// For groups: `concurrency`. For joins: the join itself.
    public var concurrency: Int?
    public var join: JoinDefinition?
}

/// The slots a task holds while running (all of them or none).
public struct TaskLimits: Sendable {
    public var runSlots: Int
    public var group: (name: String, concurrency: Int)?
    public var semaphores: [(name: String, weight: Int, capacity: Int)]
}

/// The deadlines that can stop a step.
public struct Timers: Sendable {
    /// Per attempt of a task; a group's or join's own deadline.
    public var timeout: Duration?
    /// The deadline of the group a task belongs to.
    public var groupTimeout: Duration?
    /// The whole run's deadline (not for `finally`, which has its own budget).
    public var runTimeout: Duration?
}

/// A named pool, and who uses it.
public struct PlannedSemaphore: Sendable {
    public var name: String
    public var capacity: Int
    public var users: [String]
}
