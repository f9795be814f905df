#if canImport(Glibc)
import Glibc
#endif
/// Making the attempt that runs a task's `run:` script as a process tree.
extension RunEngine {
    func makeProcessAttempt(for index: Int, script: Template, completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        guard let reaper else {
            return FailedAttempt(reason: "cannot watch child processes: \(reaperProblem ?? "unknown error")", queue: queue, completion: completion)
        }
        let name = nodes[index].name
        let attempt = nodes[index].attempt
        let task = nodes[index].definition  // the reference: its fields are read in place
        do throws(TemplateRenderError) {
            let rendered = try renderShell(script, for: index)
            // What a task sets on top of flowrun's own environment, in the order FORMAT.md §8 gives.
            var overrides: [(key: String, value: String)] = []
            overrides.reserveCapacity(plan.workflow.env.count + (task?.value.env.count ?? 0) + 7)
            for entry in plan.workflow.env { overrides.append((entry.name, try renderText(entry.value, for: index))) }
            for entry in task?.value.env ?? [] { overrides.append((entry.name, try renderText(entry.value, for: index))) }
            let outputPath = record.outputPath(for: name, attempt: attempt)
            overrides.append(("FLOWRUN_TASK", name))
            overrides.append(("FLOWRUN_RUN_ID", record.runID))
            overrides.append(("FLOWRUN_OUTPUT", outputPath))
            overrides.append(("FLOWRUN_ATTEMPT", String(attempt)))
            if let item = nodes[index].item { overrides.append(("FLOWRUN_ITEM", item)) }
            if let position = nodes[index].index { overrides.append(("FLOWRUN_INDEX", String(position))) }
            let marker = ProcessTreeMarker(runID: record.runID, serial: nextTreeSerial())
            overrides.append((ProcessTreeMarker.variable, marker.value(inherited: inheritedTreeMarker)))
            let environment = childEnvironment(overrides, ownKeysFrom: plan.workflow.env.count + (task?.value.env.count ?? 0))
            let setup = ProcessAttempt.Setup(
                shell: plan.workflow.shell, script: rendered, environment: environment.entries, inherited: environment.inherited,
                workingDirectory: try task?.value.cwd.map { (cwd: Template) throws(TemplateRenderError) -> String in try renderText(cwd, for: index) },
                logPath: record.logPath(for: name), outputPath: outputPath,
                tree: marker, grace: plan.workflow.killGrace,
                // Five descriptors a running task instead of three (two pipes
                // and the log): only where max_parallel such tasks fit the limit.
                holdsWriteEnds: plan.maxParallel <= (Self.descriptorLimit - 64) / 5,
                outputFiles: outputFiles, secretMasker: secretMasker)
            return ProcessAttempt(
                setup, queue: queue, pump: pump, reaper: reaper, killer: killer,
                escapeesExist: escapeesExist,
                onProgress: { [unowned self] percent in progressed(index, percent) },
                onLine: streamsOutput ? { [reporters] line in
                    for reporter in reporters { reporter.output(task: name, line: line) }
                } : nil,
                completion: completion)
        } catch {
            return FailedAttempt(reason: error.description, queue: queue, completion: completion)
        }
    }

    /// How many descriptors flowrun may have open (RLIMIT_NOFILE's soft limit).
    static let descriptorLimit: Int = {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(clamping: min(limit.rlim_cur, 1 << 40))  // unlimited is all ones
    }()

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

    /// "KEY=VALUE" in one allocation.
    private static func entry(_ key: String, _ value: String) -> String {
        var entry = ""
        entry.reserveCapacity(key.utf8.count + 1 + value.utf8.count)
        entry += key
        entry += "="
        entry += value
        return entry
    }

    func progressed(_ index: Int, _ percent: Int) {
        guard nodes[index].status == .running else { return }
        var progress = event(.taskProgress, index)
        progress.progress = percent
        emit(progress)
    }
}
