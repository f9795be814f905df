/// The `sbatch` flags a task's jobs are submitted with (SPEC §12), one
/// function for the dry run and the engine, so what `--dry-run` shows is
/// what runs. The session adds each submission's own: `--parsable`, the
/// job name, the log paths and, for a fan-out batch, `--array`.
public enum SlurmArguments {
    /// The `slurm:` block's flags, then `--time` from `timeout:`, the
    /// resources (§13), and `options` as written (last, so they can override).
    /// `resources` replaces the task's declared ones (a retry that
    /// `retry_resources` grew).
    public static func of(_ task: TaskDefinition, settings: SlurmSettings?, timeout: Duration?, resources: ResourceRequest? = nil) -> [String] {
        var arguments: [String] = []
        if let partition = settings?.partition { arguments.append("--partition=\(partition)") }
        if let account = settings?.account { arguments.append("--account=\(account)") }
        if let qos = settings?.qos { arguments.append("--qos=\(qos)") }
        if let timeout { arguments.append("--time=\(time(timeout))") }
        arguments += slurmResourceArguments(resources ?? task.resources)
        arguments += settings?.options ?? []
        return arguments
    }

    /// `--array=0-N%C`: elements 0…count−1, at most `concurrency` running at once.
    public static func array(count: Int, concurrency: Int?) -> String {
        "--array=0-\(count - 1)" + (concurrency.map { "%\($0)" } ?? "")
    }

    /// Slurm's `D-HH:MM:SS`, rounded up to a whole second (Slurm itself
    /// counts minutes; flowrun's own deadline stops the task on time).
    public static func time(_ duration: Duration) -> String {
        let total = Int((duration.seconds).rounded(.up))
        let days = total / 86_400, hours = total % 86_400 / 3600, minutes = total % 3600 / 60, seconds = total % 60
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days)-\(two(hours)):\(two(minutes)):\(two(seconds))"
    }
}

/// A task's declared resources as `sbatch` flags (SPEC §13): `cpus` as
/// `--cpus-per-task` (Slurm counts whole CPUs: a fraction rounds up),
/// `memory` as `--mem` in MiB (rounded up). `capacity` does not apply on
/// Slurm: the cluster admits.
public func slurmResourceArguments(_ resources: ResourceRequest?) -> [String] {
    guard let resources else { return [] }
    var arguments: [String] = []
    if let cpus = resources.cpus { arguments.append("--cpus-per-task=\(max(1, Int(cpus.rounded(.up))))") }
    if let bytes = resources.memoryBytes {
        let mebibytes = bytes / 1_048_576 + (bytes % 1_048_576 == 0 ? 0 : 1)
        arguments.append("--mem=\(max(1, mebibytes))M")
    }
    return arguments
}
