import FlowrunModel
import FlowrunValues

/// The plan for people: `flowrun FILE --dry-run`.
extension Plan {
    package var text: String {
        var lines: [String] = []
        lines.reserveCapacity(16 + 10 * (steps.count + finallySteps.count))
        let workflow = workflowShown
        let known = PlanTimeValues(vars: workflow.vars)
        lines.append("Plan for \(workflow.name) (\(workflow.file)) — dry run: nothing was executed")
        if let description = workflow.description { lines.append("  " + description) }
        let maxParallelSource = workflow.maxParallel != nil ? "" : workflow.maxParallelIsCPUCount ? " (cpus: the CPU count)" : " (default)"
        var settings = ["max_parallel \(maxParallel)\(maxParallelSource)"]
        settings.append("timeout \(workflow.timeout?.value.text ?? "none")")
        settings.append("fail_fast \(workflow.failFast)")
        settings.append("kill_grace \(workflow.killGrace.text)")
        settings.append("shell \(workflow.shell)")
        lines.append("  " + settings.joined(separator: " · "))
        if !workflow.vars.isEmpty {
            lines.append("  vars: " + workflow.vars.map { variable in
                // A computed value is known only once its task (vars.NAME) ran.
                variable.command.map { "\(variable.name)=$(\($0)) (computed at run time by vars.\(variable.name))" } ?? "\(variable.name)=\(Self.quoted(variable.value))"
            }.joined(separator: ", "))
        }
        if !workflow.env.isEmpty {
            lines.append("  env: " + workflow.env.map { "\($0.name)=\(Self.quoted($0.value.source))" + Self.filledIn($0.value, known: known) }.joined(separator: ", "))
        }
        if steps.contains(where: { $0.task?.resources != nil }) || finallySteps.contains(where: { $0.task?.resources != nil }) {
            lines.append("  capacity \(CPUText.text(capacity.cpus)) CPUs\(capacity.cpusAreAuto ? " (auto)" : ""), \(ByteSize.text(capacity.memoryBytes)) memory\(capacity.memoryIsAuto ? " (auto)" : ""): what declared resources are admitted against")
        }
        for semaphore in semaphores {
            let users = semaphore.users.isEmpty ? "unused" : "used by " + semaphore.users.joined(separator: ", ")
            let kind = semaphore.isFamily ? "semaphore family" : "semaphore"
            let capacity = semaphore.isFamily ? "capacity \(semaphore.capacity) per pool" : "capacity \(semaphore.capacity)"
            lines.append("  \(kind) \(semaphore.name): \(capacity), \(users)")
        }
        if !only.isEmpty {
            lines.append("  targets \(only.joined(separator: ", "))\(targetsAreDefault ? " (the file's default)" : ""): running those and what they need")
        }

        for (number, stage) in stages.enumerated() {
            lines.append("")
            lines.append("Stage \(number + 1)" + (number == 0 ? " — starts at once" : ""))
            for step in stage { lines += Self.describe(step, workflow: workflow, known: known) }
        }
        if !finallySteps.isEmpty {
            lines.append("")
            lines.append("Finally (after everything else has settled, whatever happened)")
            for step in finallySteps { lines += Self.describe(step, workflow: workflow, known: known) }
        }
        let taskCount = steps.filter { $0.kind == .task }.count + finallySteps.count
        let fanOuts = steps.filter { $0.kind == .fanOut }
        let fanOutMembers = fanOuts.compactMap(\.fanOutCount).reduce(0, +)
        let unknown = fanOuts.filter { $0.fanOutCount == nil }.count
        let tasks = taskCount + fanOutMembers
        var total = "\(tasks) task\(tasks == 1 ? "" : "s")"
        if unknown > 0 { total += " + \(unknown) fan-out\(unknown == 1 ? "" : "s") sized at run time" }
        let groupCount = steps.filter { $0.kind == .group }.count
        let joinCount = steps.filter { $0.kind == .join }.count
        lines.append("")
        lines.append("\(total), \(groupCount) group\(groupCount == 1 ? "" : "s"), \(joinCount) join\(joinCount == 1 ? "" : "s")")
        // Each line's secrets masked first (a multi-line value sits whole in
        // its line), then its control characters escaped: names, items,
        // values and scripts come from the file and `--var`, and none of
        // their control characters reaches the terminal raw.
        // Into one string sized once: the lines of 2,000 tasks are a megabyte,
        // and each copy of it freed is a heap consolidation.
        var text = ""
        text.reserveCapacity(lines.reduce(0) { $0 + $1.utf8.count + 1 } + 64)
        for line in lines {
            text += TerminalText.escaped(shown(line))
            text += "\n"
        }
        return text
    }

    private static func describe(_ step: PlanStep, workflow: Workflow, known: PlanTimeValues) -> [String] {
        let vars = workflow.vars
        var lines: [String] = []
        func row(_ label: String, _ value: String) {
            lines.append("      " + (label + ":").padding(to: 10) + " " + value)
        }
        switch step.kind {
        case .task, .fanOut:
            let heading = step.kind == .fanOut
                ? "fan-out, \(step.fanOutCount.map { "\($0) member\($0 == 1 ? "" : "s")" } ?? "member count known at run time (\(step.name))")"
                : step.task?.isService == true ? "service" : "task"
            lines.append("  \(step.name)  [\(heading)\(step.kind == .fanOut && step.task?.isService == true ? ", services" : "")]")
            guard let task = step.task else { break }
            if let description = task.description { row("about", description) }
            if task.isService {
                // What its dependents wait for (SPEC §14); without a probe, for its start.
                row("ready", task.ready.map { "\($0.summary), every \($0.interval.text), timeout \($0.timeout.text)" } ?? "when started (no ready: probe)")
            }
            if !task.aliases.isEmpty { row("aliases", task.aliases.map(\.value).joined(separator: ", ")) }
            if let prompt = task.prompt { row("prompt", prompt.value + " (asked before the run; --yes answers y)") }
            if let call = task.templateCall { row("uses", call.template + " " + call.arguments.map { "\($0.name)=\(quoted($0.value))" }.joined(separator: ", ")) }
            switch task.action {
            case .run(let script):
                row("run", oneLine(script.source))
                let launch = ScriptLaunch.of(shell: task.shell, script: script.source)
                if launch != .shellCommand { row("shell", launch.text(shell: "")) }
            case .sleep(let duration): row("sleep", duration.text + (duration.isRange ? " (random)" : ""))
            case .http(let request): row("http", "\(request.method) \(URLRedaction.redact(request.url.source)) (expect \(request.expect))")
            }
            if let sbatch = Self.sbatchArguments(step, workflow: workflow) { row("executor", "slurm: sbatch " + sbatch.joined(separator: " ")) }
            if let source = step.fanOutSource { row("foreach", describe(source, axes: step.fanOutAxes)) }
            if let split = step.fanOutSplit { row("split", split.text) }
            if let items = step.fanOutItems { row("targets", describeTargets(items, of: step, template: task.nameTemplate, vars: vars)) }
            if let name = task.nameTemplate { row("names", name.source) }
            if let source = step.fanOutSource, case .records(let items) = source, let group = step.group,
               let names = MemberNaming.staticNames(group: group, source: source, template: task.nameTemplate, axes: step.fanOutAxes, vars: vars) {
                // The expanded matrix or list of mappings: each member and its item.
                let width = min(names.map(\.count).max() ?? 0, 60)
                for (offset, name) in names.enumerated() {
                    let line = name.padding(to: width) + "  " + items[offset].displayText
                    lines.append("      " + (offset == 0 ? "members:".padding(to: 10) : String(repeating: " ", count: 10)) + " " + line)
                }
            }
            if !step.needs.isEmpty { row("needs", step.needs.joined(separator: ", ") + (task.when == .success ? "" : " (when: \(task.when.rawValue))")) }
            if let previous = step.runsAfter { row("after", "\(previous) (\(step.runsAfterReason ?? "sequential group \(step.group ?? "")"))") }
            if step.kind == .fanOut && step.sequential { row("order", "one member at a time, in item order") }
            let conditionText = task.condition?.value.description
            if let conditionText { row("if", conditionText) }
            if let limits = step.limits { row("limits", describe(limits)) }
            if let resources = task.resources { row("resources", resources.text + (task.retryResources.map { ", retried out of memory with memory ×\(CPUText.text($0.memoryFactor))" } ?? "")) }
            var policy: [String] = []
            if let timeout = step.timers.timeout { policy.append("timeout \(timeout.text) per attempt") }
            if let groupTimeout = step.timers.groupTimeout { policy.append("group deadline \(groupTimeout.text)") }
            if task.retries > 0 {
                policy.append("retries \(task.retries) (delay \(task.retryDelay.text), backoff ×\(task.backoff.formatted))")
            }
            if task.continueOnError { policy.append("continue_on_error") }
            if !policy.isEmpty { row("policy", policy.joined(separator: " · ")) }
            if !task.env.isEmpty { row("env", task.env.map { "\($0.name)=\(quoted($0.value.source))" + filledIn($0.value, known: known) }.joined(separator: ", ")) }
            if let cwd = task.cwd { row("cwd", cwd.source + filledIn(cwd, known: known)) }
            // What planning can evaluate already (vars, host facts, functions of them).
            for entry in known.entries(of: task, conditionText: conditionText) { row("value", "${{ \(entry.expression) }} = \(quoted(entry.value))") }
            if !task.sources.isEmpty { row("sources", task.sources.map(\.source).joined(separator: ", ")) }
            if !task.generates.isEmpty { row("generates", task.generates.map(\.source).joined(separator: ", ")) }
        case .group:
            let count = step.fanOutSource == nil ? "\(step.members.count) member\(step.members.count == 1 ? "" : "s")" : describeGroupSize(step)
            lines.append("  \(step.name)  [group, \(count)\(step.sequential ? ", sequential" : "")]")
            row("members", step.members.joined(separator: ", "))
            if !step.needs.isEmpty { row("needs", step.needs.joined(separator: ", ")) }
            if let previous = step.runsAfter { row("after", "\(previous) (\(step.runsAfterReason ?? ""))") }
            if let when = step.groupWhen { row("when", when.rawValue) }
            if let condition = step.groupCondition { row("if", condition.value.description) }
            var policy: [String] = []
            if let concurrency = step.concurrency { policy.append("concurrency \(concurrency)") }
            if let timeout = step.timers.timeout { policy.append("deadline \(timeout.text)") }
            if !policy.isEmpty { row("policy", policy.joined(separator: " · ")) }
        case .join:
            guard let join = step.join else { break }
            lines.append("  \(step.name)  [join]")
            row("wait", step.members.joined(separator: ", "))
            let required = join.need.value.required(of: step.members.count)
            row("need", "\(join.need.value) (\(required) of \(step.members.count) must succeed)")
            if let timeout = join.timeout?.value { row("deadline", "\(timeout.text), then \(join.onTimeout == .continue ? "continue with partial results" : "fail")") }
            row("report", join.report.map { $0.map(\.text).joined(separator: ", ") } ?? "every member's stash")
        }
        if !step.joins.isEmpty { row("joins", step.joins.joined(separator: ", ")) }
        return lines
    }

    /// "members g[3] (item 103), g[5] (item 105) only": each member named
    /// as a target by the name it runs under and its item, as the run shows
    /// it (issue 31: this said "item 3", the index, for item 103).
    private static func describeTargets(_ items: [Int], of step: PlanStep, template: Template?, vars: [Variable]) -> String {
        let group = step.group ?? step.name
        let members = items.map { index in
            guard let source = step.fanOutSource,
                  let member = MemberNaming.staticMember(index, group: group, source: source, template: template, axes: step.fanOutAxes, vars: vars)
            else { return "\(group)[\(index)]" }
            return "\(member.name) (item \(member.item.displayText))"
        }
        return "member" + (items.count == 1 ? " " : "s ") + members.joined(separator: ", ") + " only (named as targets)"
    }

    private static func describeGroupSize(_ step: PlanStep) -> String {
        let statics = step.members.count - 1
        let fanOut = step.fanOutCount.map(String.init) ?? "*"
        return statics > 0 ? "\(statics) + \(fanOut) members" : "\(fanOut) member\(step.fanOutCount == 1 ? "" : "s")"
    }

    private static func describe(_ limits: TaskLimits) -> String {
        var parts = ["run slot (\(limits.runSlots) at once)"]
        if let group = limits.group { parts.append("group \(group.name) (\(group.concurrency) at once)") }
        for semaphore in limits.semaphores {
            var part = "\(semaphore.name) \(semaphore.weight)/\(semaphore.capacity)"
            var notes: [String] = []
            if let family = semaphore.family { notes.append("family \(family)") }
            if semaphore.isComputed {
                if let pools = semaphore.pools {
                    let shown = pools.prefix(8).joined(separator: ", ") + (pools.count > 8 ? ", … (\(pools.count) pools)" : "")
                    notes.append("pool" + (pools.count == 1 ? " " : "s ") + shown)
                    if !semaphore.unmatched.isEmpty {
                        notes.append(semaphore.unmatched.prefix(8).joined(separator: ", ") + " match" + (semaphore.unmatched.count == 1 ? "es" : "")
                            + " no declared semaphore: those members will fail")
                    }
                } else {
                    notes.append("pool named at run time")
                }
            }
            if !notes.isEmpty { part += " (" + notes.joined(separator: "; ") + ")" }
            parts.append(part)
        }
        return parts.joined(separator: " + ")
    }

    private static func describe(_ source: FanOutSource, axes: [String]?) -> String {
        switch source {
        case .records(let items):
            let count = "\(items.count) \(items.count == 1 ? "combination" : "combinations")"
            if let axes { return "matrix " + (axes.isEmpty ? "of include: only" : axes.joined(separator: " × ")) + ", " + count }
            return "\(items.count) mapping\(items.count == 1 ? "" : "s")"
        case .list(let items):
            let shown = items.prefix(5).map { quoted($0) }.joined(separator: ", ")
            return "[" + shown + (items.count > 5 ? ", … (\(items.count) items)" : "") + "]"
        case .range(let low, let high): return "range \(low)…\(high)"
        case .expression(let template): return template.source + " (read at run time)"
        }
    }

    /// ` → VALUE` for a template whose value the plan knows (vars, flowrun's environment), else "".
    private static func filledIn(_ template: Template, known: PlanTimeValues) -> String {
        known.filledIn(template).map { " → " + quoted($0) } ?? ""
    }

    private static func oneLine(_ text: String) -> String {
        // ASCII without `\r`: a byte is a Character, so the same cut by byte
        // (a `run:` of every task is measured; Characters are the slow way).
        if let line = oneLineByByte(text) { return line }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard let first = lines.first else { return "" }
        let shown = first.count > 70 ? first.prefix(70) + "…" : first
        return String(shown) + (lines.count > 1 ? "  (+\(lines.count - 1) more line\(lines.count == 2 ? "" : "s"))" : "")
    }

    /// `oneLine` for ASCII text without `\r`; nil for any other.
    private static func oneLineByByte(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { bytes -> String? in
            var first: Range<Int>?
            var lines = 0
            var start = 0
            for index in 0...bytes.count {
                let byte = index < bytes.count ? bytes[index] : 0x0A
                if byte >= 0x80 || byte == 0x0D { return nil }
                guard byte == 0x0A else { continue }
                if index > start {
                    lines += 1
                    if first == nil { first = start..<index }
                }
                start = index + 1
            }
            guard let first else { return "" }
            let shown = first.count > 70 ? String(decoding: UnsafeBufferPointer(rebasing: bytes[first.lowerBound..<first.lowerBound + 70]), as: UTF8.self) + "…"
                : String(decoding: UnsafeBufferPointer(rebasing: bytes[first]), as: UTF8.self)
            return shown + (lines > 1 ? "  (+\(lines - 1) more line\(lines == 2 ? "" : "s"))" : "")
        }
    }

    private static func quoted(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "," || $0 == "\"" }) || value.isEmpty ? "\"\(value)\"" : value
    }
}

extension SleepDuration {
    var isRange: Bool {
        if case .range = self { return true }
        return false
    }
}

extension String {
    package func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
