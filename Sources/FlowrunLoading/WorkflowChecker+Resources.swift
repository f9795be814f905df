import FlowrunModel
import FlowrunValues

extension WorkflowChecker {
    /// A task declaring more than `capacity` could never start (SPEC §13);
    /// a `retry_resources` with no memory to grow has nothing to do.
    mutating func checkResources() {
        let declaring = workflow.groups.compactMap { $0.fanOut?.template } + workflow.mainTasks + workflow.finally
        guard declaring.contains(where: { $0.resources != nil || $0.retryResources != nil }) else { return }
        let capacity = workflow.capacity
        let cpus = capacity.cpus ?? HostCapacity.cpus
        let memory = capacity.memoryBytes ?? HostCapacity.memoryBytes
        let whose = { (explicit: Bool) in explicit ? "capacity" : "this machine's capacity (capacity: auto)" }
        for task in declaring {
            if task.retryResources != nil, task.resources?.memoryBytes == nil {
                diagnostics.append(.error("retry_resources grows resources.memory, which task '\(task.name)' does not declare: add resources: {memory: SIZE}", at: task.location))
            }
            // On Slurm the cluster admits (`--cpus-per-task`, `--mem`): this machine's capacity does not apply.
            guard let request = task.resources, workflow.executor(of: task) != .slurm else { continue }
            if let asked = request.cpus, asked > cpus {
                diagnostics.append(.error(
                    "task '\(task.name)' declares \(CPUText.text(asked)) CPUs, more than \(whose(capacity.cpus != nil)) of \(CPUText.text(cpus)) CPU\(cpus == 1 ? "" : "s"): it could never start; lower resources.cpus or raise capacity.cpus",
                    at: request.location))
            }
            if let asked = request.memoryBytes, asked > memory {
                diagnostics.append(.error(
                    "task '\(task.name)' declares \(ByteSize.text(asked)) of memory, more than \(whose(capacity.memoryBytes != nil)) of \(ByteSize.text(memory)): it could never start; lower resources.memory or raise capacity.memory",
                    at: request.location))
            }
        }
    }
}
