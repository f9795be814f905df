#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues
package import FlowrunPlanning

/// What `--dry-run` says about tasks with `sources:`: up to date, would
/// run (and why), or decided only when it runs (it reads values other
/// tasks make). Fan-outs over a literal list or range are shown member by
/// member, the first `membersCheckedAtMost` of them.
package enum IncrementalPreview {
    /// A fan-out's members checked one by one; the rest are counted. Each
    /// check hashes the member's sources, and a range may be ten million long.
    package static let membersCheckedAtMost = 1_000

    package static func lines(_ plan: Plan, store: IncrementalStore) -> [String] {
        var decisions: [String: UpToDate] = [:]
        return check(plan, store: store, identities: TaskIdentities.compute(for: plan), decisions: &decisions).lines
    }

    /// Whether a run of `plan` starts no process: every step, `finally`
    /// ones too, is an incremental task (or a group of them) up to date now,
    /// none waiting on a step that might run, none a service, none reading
    /// a value the engine fills in otherwise than this check does (`host`,
    /// `args`, an item's field). Decided before the supervisor split, on one
    /// thread; the engine's own check then reads the same records and hashes
    /// (`IncrementalStore.read` keeps what this read, `ContentHashCache`
    /// holds a hash until a task starts), so it finds what this found.
    package static func startsNoTask(_ plan: Plan, store: IncrementalStore, identities: [String: TaskIdentity]) -> Bool {
        let steps = plan.steps + plan.finallySteps
        guard steps.allSatisfy({ step in
            guard let task = step.task else { return step.kind == .group }
            return !task.isService && rendersAsTheEngineDoes(task)
        }) else { return false }
        var decisions: [String: UpToDate] = [:]
        let current = check(plan, store: store, identities: identities, decisions: &decisions).current
        guard steps.allSatisfy({ current.contains($0.name) }) else { return false }
        store.keep(decisions)
        return true
    }

    /// The preview's lines, and the steps known to run nothing; `decisions`
    /// gets each task found up to date.
    private static func check(
        _ plan: Plan, store: IncrementalStore, identities: [String: TaskIdentity], decisions: inout [String: UpToDate]
    ) -> (lines: [String], current: Set<String>) {
        var lines: [String] = []
        // Steps known to run nothing: a need outside this set may still change a task's sources.
        var current = Set<String>()
        for step in plan.steps + plan.finallySteps {
            if step.kind == .group, step.members.allSatisfy(current.contains) { current.insert(step.name) }
            guard let task = step.task, !task.sources.isEmpty, let identity = identities[task.name] else { continue }
            let waitsOn = step.needs.filter { !current.contains($0) }
            let before = lines.count
            defer {
                if lines.count == before + 1, lines[before].hasSuffix(": up to date") {
                    if waitsOn.isEmpty {
                        current.insert(step.name)
                    } else {
                        lines[before] += " so far (it runs after \(waitsOn.joined(separator: ", ")), which may change its sources)"
                    }
                }
            }
            if readsRunTimeValues(task) {
                lines.append("\(step.name): decided when it runs (it reads values of other tasks)")
                continue
            }
            guard step.kind == .fanOut else {
                lines.append(line(step.name, task: task, identity: identity.hash, item: nil, index: nil, plan: plan, store: store, decisions: &decisions))
                continue
            }
            let count: Int
            let item: (Int) -> String
            switch step.fanOutSource {
            case .list(let list)?:
                count = list.count
                item = { list[$0] }
            case .range(let low, let high)?:
                // Never made into a list: a range may have ten million items.
                count = high >= low ? high - low + 1 : 0
                item = { String(low + $0) }
            case .expression(let template)?:
                // `${{ tasks.list.stdout }}` of a task up to date: its stdout is the one its record kept.
                guard let items = storedItems(template, split: step.fanOutSplit, current: current, decisions: decisions) else {
                    lines.append("\(step.name): decided when it runs (its items are known only then)")
                    continue
                }
                count = items.count
                item = { items[$0] }
            default:
                lines.append("\(step.name): decided when it runs (its items are known only then)")
                continue
            }
            let group = step.group ?? step.name
            let fanOut = FanOutIdentity(template: identity)
            for index in 0..<min(count, membersCheckedAtMost) {
                let item = item(index)
                guard let name = memberName(task: task, group: group, item: item, index: index, plan: plan) else {
                    // Named from a value only the run has: the engine's member may be another than the one checked here.
                    lines.append("\(group)[\(index)]: decided when it runs (its name reads a value known only then)")
                    continue
                }
                let member = fanOut.member(item: item)
                lines.append(line(name, task: task, identity: member.hash, item: item, index: index, plan: plan, store: store, decisions: &decisions))
                // Kept with the decision: the engine's record of the member needs it again.
                decisions[name]?.memberIdentity = (item, member)
            }
            if count > membersCheckedAtMost {
                lines.append("\(group): \(count - membersCheckedAtMost) more members, not checked (a dry run checks the first \(membersCheckedAtMost))")
            } else if waitsOn.isEmpty && lines[before...].allSatisfy({ $0.hasSuffix(": up to date") }) {
                current.insert(step.name)
            }
        }
        return (lines, current)
    }

    /// A fan-out's items when they are the whole stdout of a task known to
    /// run nothing (the engine then feeds it the stdout its record kept), as
    /// text; nil when they are known only when it runs, or are records.
    private static func storedItems(_ template: Template, split: FanOutSplit?, current: Set<String>, decisions: [String: UpToDate]) -> [String]? {
        var source: String?
        for segment in template.segments {
            switch segment {
            case .text(let text):
                guard text.utf8.allSatisfy(ExpressionValue.isSpace) else { return nil }
            case .expression(.operand(let operand), _):
                guard source == nil, case .task(let name, .stdout) = operand.path, current.contains(name) else { return nil }
                source = name
            case .expression:
                return nil
            }
        }
        guard let source, let stdout = decisions[source]?.stdout else { return nil }
        var feed = RunEngine.feed(stdout, split: split)
        var items: [String] = []
        while let item = feed.next() {
            // Past what a dry run checks: left to the run, which may start a member.
            guard case .text(let text) = item, items.count < membersCheckedAtMost else { return nil }
            items.append(text)
        }
        return feed.failure == nil ? items : nil
    }

    private static func line(
        _ name: String, task: TaskDefinition, identity: String, item: String?, index: Int?, plan: Plan, store: IncrementalStore,
        decisions: inout [String: UpToDate]
    ) -> String {
        let record = store.read(task: name)
        let check: IncrementalCheck
        do throws(TemplateRenderError) {
            check = try IncrementalCheck.make(
                task: task, identity: identity, workflowEnvironment: plan.workflow.env, recorded: record, hashes: store.hashes,
                renderShell: { (template: Template) throws(TemplateRenderError) -> String in
                    try render(template, mode: TemplateRenderer.scriptMode(ScriptLaunch.of(shell: task.shell, script: template.source)), item: item, index: index, plan: plan)
                },
                renderText: { (template: Template) throws(TemplateRenderError) -> String in try render(template, mode: .text, item: item, index: index, plan: plan) })
        } catch {
            return "\(name): would fail: \(error.message)"
        }
        if check.sourcesUnreadable { return "\(name): would run (a source cannot be read)" }
        guard let record else { return "\(name): would run (no successful run recorded)" }
        if let generated = check.generatedFiles(upToDateWith: record, hashes: store.hashes) {
            decisions[name] = UpToDate(record: record, check: check, generated: generated)
            return "\(name): up to date"
        }
        if record.identity != check.identity { return "\(name): would run (its definition changed)" }
        if record.sources != check.sources { return "\(name): would run (sources changed)" }
        return "\(name): would run (generated files changed or missing)"
    }

    /// The member's name as the engine makes it (`RunEngine.memberName`:
    /// `MemberNaming`, then the template filled in, then `GROUP[INDEX]`), so
    /// that the record read here is the one the engine's member reads, and
    /// the decision kept is the one it takes; nil when the `name:` reads a
    /// value only the run has (a task's stash, a host fact), which this
    /// check would fill in as '' and so check another member than the run's.
    private static func memberName(task: TaskDefinition, group: String, item: String, index: Int, plan: Plan) -> String? {
        if let made = MemberNaming.name(
            group: group, item: .text(item), index: index, template: task.nameTemplate, fieldNames: false, axes: nil, vars: plan.workflow.vars) {
            return made
        }
        guard let template = task.nameTemplate, rendersAsTheEngineDoes(template) else { return nil }
        guard let rendered = try? render(template, mode: .text, item: item, index: index, plan: plan), !rendered.isEmpty else { return "\(group)[\(index)]" }
        return rendered
    }

    private static func readsRunTimeValues(_ task: TaskDefinition) -> Bool {
        templates(of: task).contains { template in
            template.operands.contains { $0.path.referencedName != nil }
        }
    }

    /// Whether every value the task's templates read is one `StaticContext`
    /// gives as the engine does: a variable, an environment variable, the item, its index.
    private static func rendersAsTheEngineDoes(_ task: TaskDefinition) -> Bool {
        templates(of: task).allSatisfy(rendersAsTheEngineDoes)
    }

    private static func rendersAsTheEngineDoes(_ template: Template) -> Bool {
        template.operands.allSatisfy { operand in
            switch operand.path {
            case .variable, .environment, .item, .index: return true
            default: return false
            }
        }
    }

    private static func templates(of task: TaskDefinition) -> [Template] {
        var templates = task.env.map(\.value) + task.sources + task.generates + [task.cwd].compactMap { $0 }
        if case .run(let script) = task.action { templates.append(script) }
        return templates
    }

    private struct StaticContext: ExpressionContext {
        var variables: [String: String]
        var item: String?
        var index: Int?

        func value(of path: OperandPath) -> ExpressionValue? {
            switch path {
            case .variable(let name): return .string(variables[name] ?? "")
            case .environment(let name): return .string(getenv(name).map { String(cString: $0) } ?? "")
            case .item: return .string(item ?? "")
            case .index: return index.map { .number(Double($0)) } ?? .string("")
            default: return .string("")
            }
        }
    }

    private static func render(_ template: Template, mode: TemplateRenderer.Mode, item: String?, index: Int?, plan: Plan) throws(TemplateRenderError) -> String {
        var variables: [String: String] = [:]
        for variable in plan.workflow.vars { variables[variable.name] = variable.value }
        return try TemplateRenderer.render(template, mode: mode, in: StaticContext(variables: variables, item: item, index: index))
    }
}
