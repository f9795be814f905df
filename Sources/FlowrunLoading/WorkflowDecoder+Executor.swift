import FlowrunYAML
import FlowrunModel

/// `executor:` on the workflow, a group, a task or a template, and the
/// top-level `slurm:` block (SPEC §12).
extension WorkflowDecoder {
    static let slurmKeys = ["partition", "account", "qos", "options", "shared_dir"]

    /// `executor: local | slurm`.
    mutating func executor(_ node: YAMLNode) -> Located<ExecutorKind>? {
        guard !holdsExpression(node, what: "executor"), let text = string(node, what: "executor") else { return nil }
        guard let kind = ExecutorKind(rawValue: text) else {
            let known = ExecutorKind.allCases.map(\.rawValue)
            error("executor must be local or slurm, found '\(text)'\(Suggestion.hint(for: text, in: known))", at: node)
            return nil
        }
        return Located(kind, at: location(node))
    }

    /// A task's `executor: slurm` where it cannot apply: `http:` and
    /// `sleep:` run inside flowrun, not as a job.
    mutating func checkExecutor(of task: TaskDefinition, what: String, inheritedFrom group: String? = nil) {
        guard let executor = task.executor, executor.value == .slurm else { return }
        if task.isService, task.action.canRunOnSlurm {
            // Its probe runs here and its dependents start on its readiness: a job in a queue is neither.
            let origin = group.map { " (from group '\($0)')" } ?? ""
            error("\(what) is a service, which runs beside flowrun until the run ends and cannot be a Slurm job\(origin): give it 'executor: local'", at: executor.location)
            return
        }
        guard !task.action.canRunOnSlurm else { return }
        let kind = { if case .http = task.action { return "http:" } else { return "sleep:" } }()
        let origin = group.map { " (from group '\($0)')" } ?? ""
        error("\(what) is a \(kind) task, which runs inside flowrun and cannot be a Slurm job\(origin): remove 'executor: slurm' or give the task 'executor: local'", at: executor.location)
    }

    /// `slurm: {partition, account, qos, options, shared_dir}`.
    mutating func slurmSettings(_ node: YAMLNode) -> SlurmSettings? {
        guard let fields = fields(of: node, what: "slurm", allowed: Self.slurmKeys) else { return nil }
        var settings = SlurmSettings(location: location(node))
        if let node = fields["partition"]?.value { settings.partition = nonEmpty(node, what: "slurm partition") }
        if let node = fields["account"]?.value { settings.account = nonEmpty(node, what: "slurm account") }
        if let node = fields["qos"]?.value { settings.qos = nonEmpty(node, what: "slurm qos") }
        if let node = fields["shared_dir"]?.value, let folder = nonEmpty(node, what: "slurm shared_dir") {
            if folder.hasPrefix("/") {
                settings.sharedDir = folder
            } else {
                error("slurm shared_dir must be an absolute path (a folder every node sees), found '\(folder)'", at: node)
            }
        }
        if let node = fields["options"]?.value {
            if let items = node.sequence {
                for item in items {
                    guard let option = string(item, what: "a slurm option") else { continue }
                    if option.hasPrefix("-") {
                        settings.options.append(option)
                    } else {
                        error("a slurm option is an sbatch flag like --constraint=avx2, found '\(option)'", at: item)
                    }
                }
            } else {
                error("slurm options is a list of sbatch flags like [\"--constraint=avx2\"], found \(node.kindDescription)", at: node)
            }
        }
        return settings
    }

    /// A job script is a file on a shared folder, and the record promises
    /// no secret's value in any file flowrun writes: secrets and Slurm are
    /// refused together, at the first place a task is put on Slurm.
    mutating func refuseSecretsOnSlurm(_ workflow: Workflow) {
        guard !workflow.secrets.isEmpty, let first = workflow.slurmExecutorLocations.first else { return }
        error("secrets cannot reach Slurm jobs: a job script is a file on a shared folder, and flowrun writes no secret's value to a file; run the tasks that need secrets with 'executor: local', or pass the secret through a file the job reads", at: first)
    }

    private mutating func nonEmpty(_ node: YAMLNode, what: String) -> String? {
        guard let text = string(node, what: what) else { return nil }
        guard !text.isEmpty, !text.contains("${{") else {
            error("\(what) must be a plain, non-empty value", at: node)
            return nil
        }
        return text
    }
}
