/// A validated workflow file: plain values, each user-facing one with the
/// `SourceLocation` it came from.
public struct Workflow: Sendable {
    public var file: String
    /// `name:`, or the file's name without its extension.
    public var name: String
    public var description: String?
    /// Running tasks at once for the whole run; nil means the default
    /// (`Planner.defaultMaxParallel`, or the CPU count with `max_parallel: cpus`).
    public var maxParallel: Int?
    /// `max_parallel: cpus`: the number of online CPUs, resolved when planning.
    package var maxParallelIsCPUCount = false
    /// `default: [names]`: the targets a run with none named runs (SPEC §10).
    package var defaultTargets: [Reference] = []
    /// The whole-run deadline.
    public var timeout: Located<Duration>?
    public var failFast: Bool = false
    public var killGrace: Duration = .seconds(5)
    /// The top-level `shell:`: the program and its arguments (`bash -euo
    /// pipefail` or a list); scripts run as `PROGRAM ARGUMENTS… -c SCRIPT`.
    public var shellCommand: [String] = ["/bin/sh"]
    /// The shell as text, its words joined by spaces: shown by the plan and
    /// hashed into identities (`/bin/sh` for the default, as before lists).
    public var shell: String { shellCommand.joined(separator: " ") }
    public var env: [EnvironmentEntry] = []
    /// `dotenv:` — files whose `KEY=VALUE` lines fill in the environment a
    /// run starts with where the caller left a variable unset.
    package var dotenv: [DotenvFile] = []
    public var vars: [Variable] = []
    /// `secrets: [NAME, ...]`: vars and environment variables whose values
    /// are shown as `***` wherever flowrun prints or writes them.
    public var secrets: [Located<String>] = []
    public var semaphores: [SemaphoreDeclaration] = []
    /// `capacity:` — what declared `resources:` are admitted against (SPEC §13).
    public var capacity = ResourceCapacity()
    public var tasks: [TaskDefinition] = []
    public var groups: [GroupDefinition] = []
    public var joins: [JoinDefinition] = []
    public var finally: [TaskDefinition] = []
    /// `executor:` — where `run:` tasks run unless they (or their group) say otherwise.
    public var executor: Located<ExecutorKind>?
    /// `slurm:` — how tasks on Slurm are submitted.
    public var slurm: SlurmSettings?

    public init(file: String, name: String) {
        self.file = file
        self.name = name
    }

    /// Every task that runs in the main phase: top-level tasks and static group members.
    public var mainTasks: [TaskDefinition] {
        tasks + groups.flatMap(\.members)
    }

    /// `mainTasks.count`, without the copy.
    public var mainTaskCount: Int {
        groups.reduce(tasks.count) { $0 + $1.members.count }
    }
}

/// A value and where it was written.
public struct Located<Value: Sendable>: Sendable {
    public var value: Value
    public var location: SourceLocation

    public init(_ value: Value, at location: SourceLocation) {
        self.value = value
        self.location = location
    }
}

extension Located: Equatable where Value: Equatable {}
extension Located: Hashable where Value: Hashable {}

/// A name used to point at a task, group or join (`needs`, `wait`).
public typealias Reference = Located<String>

/// `vars: {bucket: nightly}`; `--var bucket=x` replaces the value.
public struct Variable: Sendable {
    public var name: String
    public var value: String
    public var location: SourceLocation
    /// `{sh: COMMAND}`: a computed value (SPEC §15), the command's stdout,
    /// set by the task `vars.NAME` the planner adds; nil once `--var` set it.
    package var command: String?
    /// `NAME: { required: true }`: a run needs `--var NAME=…` or `NAME` in the environment (SPEC §15).
    package var required = false

    package init(name: String, value: String, location: SourceLocation) {
        self.name = name
        self.value = value
        self.location = location
    }
}

/// One environment variable whose value is a template.
public struct EnvironmentEntry: Sendable {
    public var name: String
    public var value: Template
    public var location: SourceLocation

    package init(name: String, value: Template, location: SourceLocation) {
        self.name = name
        self.value = value
        self.location = location
    }
}

/// `semaphores: {network: 3}` — a named pool shared by any tasks.
public struct SemaphoreDeclaration: Sendable {
    public var name: String
    public var capacity: Int
    public var location: SourceLocation

    package init(name: String, capacity: Int, location: SourceLocation) {
        self.name = name
        self.capacity = capacity
        self.location = location
    }
}
