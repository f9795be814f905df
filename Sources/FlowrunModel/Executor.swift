/// Where a task runs (SPEC §12): on this machine, or as a job on a Slurm cluster.
public enum ExecutorKind: String, Sendable, CaseIterable {
    case local, slurm
}

/// The top-level `slurm:` block: what every Slurm job of the run is
/// submitted with (`sbatch` flags), and the folder every node sees.
public struct SlurmSettings: Sendable {
    /// `--partition`.
    public var partition: String?
    /// `--account`.
    public var account: String?
    /// `--qos`.
    public var qos: String?
    /// Passed to `sbatch` as written, after flowrun's own.
    public var options: [String] = []
    /// A folder every node sees, where job scripts, logs and exit files go;
    /// nil: the run folder (which must then be on a shared file system).
    public var sharedDir: String?
    public var location: SourceLocation

    public init(location: SourceLocation) {
        self.location = location
    }
}

extension TaskAction {
    /// `http:` and `sleep:` run inside flowrun; only a `run:` script can be a job.
    public var canRunOnSlurm: Bool {
        if case .run = self { return true }
        return false
    }
}

extension Workflow {
    /// Where `task` runs: its own `executor:` (or its group's), else the
    /// workflow's for a `run:` task; `http:` and `sleep:` always locally,
    /// and services too unless they say otherwise (which validation refuses:
    /// a service's probe and its dependents' start are this machine's).
    public func executor(of task: TaskDefinition) -> ExecutorKind {
        guard task.action.canRunOnSlurm else { return .local }
        if let own = task.executor?.value { return own }
        return task.isService ? .local : executor?.value ?? .local
    }

    /// Whether any task may run on Slurm (then `sbatch` must be there at run start).
    public var usesSlurm: Bool { !slurmExecutorLocations.isEmpty }

    /// Every `executor: slurm` written in the file, in order.
    public var slurmExecutorLocations: [SourceLocation] {
        var places: [SourceLocation] = []
        func note(_ executor: Located<ExecutorKind>?) {
            if let executor, executor.value == .slurm { places.append(executor.location) }
        }
        note(executor)
        for group in groups {
            note(group.executor)
            for task in group.members { note(task.executor) }
            note(group.fanOut?.template.executor)
        }
        for task in tasks + finally { note(task.executor) }
        var seen = Set<String>()
        return places.filter { seen.insert($0.description).inserted }.sorted { ($0.line, $0.column) < ($1.line, $1.column) }
    }
}
