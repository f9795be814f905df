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
        var lines: [String] = []
        let identities = TaskIdentities.compute(for: plan)
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
                lines.append(line(step.name, task: task, identity: identity.hash, item: nil, index: nil, plan: plan, store: store))
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
            default:
                lines.append("\(step.name): decided when it runs (its items are known only then)")
                continue
            }
            let group = step.group ?? step.name
            for index in 0..<min(count, membersCheckedAtMost) {
                let item = item(index)
                var name = "\(group)[\(index)]"
                if let template = task.nameTemplate, let rendered = try? render(template, mode: .text, item: item, index: index, plan: plan), !rendered.isEmpty {
                    name = rendered
                }
                lines.append(line(name, task: task, identity: identity.member(item: item).hash, item: item, index: index, plan: plan, store: store))
            }
            if count > membersCheckedAtMost {
                lines.append("\(group): \(count - membersCheckedAtMost) more members, not checked (a dry run checks the first \(membersCheckedAtMost))")
            } else if waitsOn.isEmpty && lines[before...].allSatisfy({ $0.hasSuffix(": up to date") }) {
                current.insert(step.name)
            }
        }
        return lines
    }

    private static func line(_ name: String, task: TaskDefinition, identity: String, item: String?, index: Int?, plan: Plan, store: IncrementalStore) -> String {
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
        guard let record else { return "\(name): would run (no successful run recorded)" }
        if check.isUpToDate(with: record, hashes: store.hashes) { return "\(name): up to date" }
        if record.identity != check.identity { return "\(name): would run (its definition changed)" }
        if record.sources != check.sources { return "\(name): would run (sources changed)" }
        return "\(name): would run (generated files changed or missing)"
    }

    private static func readsRunTimeValues(_ task: TaskDefinition) -> Bool {
        var templates = task.env.map(\.value) + task.sources + task.generates + [task.cwd].compactMap { $0 }
        if case .run(let script) = task.action { templates.append(script) }
        return templates.contains { template in
            template.operands.contains { $0.path.referencedName != nil }
        }
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
