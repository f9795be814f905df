// FoundationEssentials, not Foundation: the whole of Foundation (with ICU)
// costs every flowrun process milliseconds of loading, for one JSONEncoder.
import FoundationEssentials
import FlowrunModel
import FlowrunValues

/// The plan as JSON (`flowrun FILE --dry-run --output json`); the schema is
/// `docs/plan-json.md`. Durations are in seconds; absent values are null.
extension Plan {
    package static let jsonSchemaVersion = "flowrun-plan/1"

    package var json: String {
        var writer = PrettyJSONWriter(capacity: 1024 + 1024 * (steps.count + finallySteps.count))
        PlanDocument(self).write(to: &writer)
        return shownJSON(writer.failed ? "{}" : writer.text) + "\n"
    }

    /// The same document through Foundation's `JSONEncoder`, as `json` was
    /// written before `PrettyJSONWriter`: the tests hold the two equal byte
    /// for byte on every recipe and generated plan.
    package var jsonThroughFoundation: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(PlanDocument(self))) ?? Data("{}".utf8)
        return shownJSON(JSONText.escapingControls(String(decoding: data, as: UTF8.self))) + "\n"
    }
}

private struct PlanDocument: Encodable {
    struct WorkflowInfo: Encodable {
        var name: String, file: String, description: String?
        var max_parallel: Int, timeout_seconds: Double?, fail_fast: Bool, kill_grace_seconds: Double, shell: String
        // `{sh: …}` vars: name → command (the value is known once vars.NAME ran).
        var vars: [String: String], computed_vars: [String: String]?, env: [String: String]
        /// What declared resources are admitted against, `auto` resolved (SPEC §13); only when a task declares some.
        var capacity: Capacity?
    }

    struct Capacity: Encodable {
        var cpus: Double, memory_bytes: UInt64, cpus_auto: Bool, memory_auto: Bool
    }

    struct Resources: Encodable {
        var cpus: Double?, memory_bytes: UInt64?, retry_memory_factor: Double?
    }

    struct Semaphore: Encodable {
        var name: String, capacity: Int, users: [String]
        /// A family (`batch-*`): a pool of `capacity` per matching name.
        var family: Bool?
    }

    struct Action: Encodable {
        var type: String
        var script: String?
        var seconds: Double?, min_seconds: Double?, max_seconds: Double?
        var method: String?, url: String?, headers: [String: String]?, body: String?, expect: Int?
        /// A `run:` that does not run as `SHELL -c`: a task's `shell:` words, or its `#!` line.
        var shell: [String]?, shebang: String?
    }

    struct TemplateUse: Encodable {
        var template: String, with: [String: String]
    }

    struct Limits: Encodable {
        struct GroupLimit: Encodable { var name: String, concurrency: Int }
        struct SemaphoreLimit: Encodable {
            var name: String, weight: Int, capacity: Int
            /// The family of the pool; `computed`: the name is filled in at run time, `pools` those the plan can tell.
            var family: String?, computed: Bool?, pools: [String]?
        }
        var run: Int, group: GroupLimit?, semaphores: [SemaphoreLimit]
    }

    struct FanOutInfo: Encodable {
        var count: Int?, source: String, items: [String]?, name_template: String?
        var split: String?, axes: [String]?, members: [Member]?
    }

    /// A member known before the run: its name and its item (text, or an object for a record).
    struct Member: Encodable {
        var name: String, item: Item
    }

    struct Item: Encodable {
        var value: FanOutItem

        func encode(to encoder: any Encoder) throws {
            switch value {
            case .text(let text), .literal(let text):
                var container = encoder.singleValueContainer()
                try container.encode(text)
            case .list(let items):
                var container = encoder.unkeyedContainer()
                for item in items { try container.encode(Item(value: item)) }
            case .record(let fields):
                var container = encoder.container(keyedBy: Key.self)
                for field in fields { try container.encode(Item(value: field.value), forKey: Key(stringValue: field.key)) }
            }
        }

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
    }

    struct Value: Encodable {
        var expression: String, value: String
    }

    /// A service's probe: `{"check":"tcp","target":"127.0.0.1:8000","timeout_seconds":30,"interval_seconds":0.2}`.
    struct ReadyProbeJSON: Encodable {
        var check: String, target: String, status: Int?, timeout_seconds: Double, interval_seconds: Double

        init(_ probe: ReadyProbe) {
            switch probe.check {
            case .tcp(let address): (check, target, status) = ("tcp", address.source, nil)
            case .http(let url, let expected): (check, target, status) = ("http", url.source, expected)
            case .line(let pattern): (check, target, status) = ("line", pattern, nil)
            case .run(let command): (check, target, status) = ("run", command.source, nil)
            }
            timeout_seconds = probe.timeout.seconds
            interval_seconds = probe.interval.seconds
        }
    }

    struct Step: Encodable {
        var name: String, kind: String, stage: Int, line: Int, column: Int
        var needs: [String], group: String?, joins: [String]
        var description: String?
        // Tasks and fan-outs.
        var action: Action?, when: String?, `if`: String?, timeout_seconds: Double?, group_timeout_seconds: Double?
        var retries: Int?, retry_delay_seconds: Double?, backoff: Double?, continue_on_error: Bool?
        var env: [String: String]?, cwd: String?, limits: Limits?, fan_out: FanOutInfo?
        /// `resources:` (and `retry_resources:`'s factor) as declared.
        var resources: Resources?
        var sources: [String]?, generates: [String]?
        /// Expressions planning evaluated already (`PlanTimeValues`).
        var values: [Value]?
        // The step it runs after (a sequential group's member, a command-line
        // target before it) and why.
        var runs_after: String?, runs_after_reason: String?
        /// A call of a template: which one, with every parameter's value.
        var uses: TemplateUse?
        /// More names it runs by (tasks and groups), and a task's `prompt:`.
        var aliases: [String]?, prompt: String?
        /// `service: true`, and its `ready:` probe.
        var service: Bool?, ready: ReadyProbeJSON?
        /// Only for a task on Slurm: `"slurm"` and the `sbatch` arguments its jobs get.
        var executor: String?, sbatch: [String]?
        // Groups.
        var members: [String]?, concurrency: Int?, sequential: Bool?
        // Joins.
        var wait: [String]?, need: String?, required: Int?, on_timeout: String?, report: [String]?
    }

    var schema = Plan.jsonSchemaVersion
    var dry_run = true
    var workflow: WorkflowInfo
    var semaphores: [Semaphore]
    var only: [String]
    var stages: [[String]]
    var steps: [Step]
    var finally: [Step]

    init(_ plan: Plan) {
        let workflow = plan.workflowShown
        let known = PlanTimeValues(vars: workflow.vars)
        self.workflow = WorkflowInfo(
            name: workflow.name, file: workflow.file, description: workflow.description,
            max_parallel: plan.maxParallel, timeout_seconds: workflow.timeout?.value.seconds, fail_fast: workflow.failFast,
            kill_grace_seconds: workflow.killGrace.seconds, shell: workflow.shell,
            vars: Dictionary(workflow.vars.filter { $0.command == nil }.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }),
            computed_vars: Self.computedVars(workflow.vars),
            env: Dictionary(workflow.env.map { ($0.name, $0.value.source) }, uniquingKeysWith: { _, last in last }),
            capacity: (plan.steps + plan.finallySteps).contains { $0.task?.resources != nil }
                ? Capacity(cpus: plan.capacity.cpus, memory_bytes: plan.capacity.memoryBytes, cpus_auto: plan.capacity.cpusAreAuto, memory_auto: plan.capacity.memoryIsAuto)
                : nil)
        semaphores = plan.semaphores.map { Semaphore(name: $0.name, capacity: $0.capacity, users: $0.users, family: $0.isFamily ? true : nil) }
        only = plan.only
        stages = plan.stages.map { $0.map(\.name) }
        let aliases = Dictionary(TargetTable.aliases(of: workflow).map { ($0.name, $0.aliases.map(\.value)) }, uniquingKeysWith: { first, _ in first })
        steps = plan.steps.map { step in
            var shown = Self.step(step, workflow: workflow, known: known)
            if step.kind != .fanOut { shown.aliases = aliases[step.name] }
            return shown
        }
        finally = plan.finallySteps.map { Self.step($0, workflow: workflow, known: known) }
    }

    private static func computedVars(_ vars: [Variable]) -> [String: String]? {
        let computed = vars.compactMap { variable in variable.command.map { (variable.name, $0) } }
        return computed.isEmpty ? nil : Dictionary(computed, uniquingKeysWith: { _, last in last })
    }

    private static func step(_ step: PlanStep, workflow: Workflow, known: PlanTimeValues) -> Step {
        let vars = workflow.vars
        var result = Step(
            name: step.name, kind: step.kind.rawValue, stage: step.stage + 1,
            line: step.location.line, column: step.location.column,
            needs: step.needs, group: step.group, joins: step.joins)
        if let task = step.task {
            result.description = task.description
            result.action = action(task.action)
            if case .run(let script) = task.action {
                switch ScriptLaunch.of(shell: task.shell, script: script.source) {
                case .shellCommand: break
                case .interpreter(let words): result.action?.shell = words
                case .shebang(let line): result.action?.shebang = line
                }
            }
            result.uses = task.templateCall.map { call in
                TemplateUse(template: call.template, with: Dictionary(call.arguments.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }))
            }
            result.when = task.when.rawValue
            result.prompt = task.prompt?.value
            result.if = task.condition?.value.description
            result.timeout_seconds = step.timers.timeout?.seconds
            result.group_timeout_seconds = step.timers.groupTimeout?.seconds
            result.retries = task.retries
            result.retry_delay_seconds = task.retryDelay.seconds
            result.backoff = task.backoff
            result.continue_on_error = task.continueOnError
            result.env = Dictionary(task.env.map { ($0.name, $0.value.source) }, uniquingKeysWith: { _, last in last })
            result.cwd = task.cwd?.source
            let values = known.entries(of: task, conditionText: result.if)
            if !values.isEmpty { result.values = values.map { Value(expression: $0.expression, value: $0.value) } }
            if !task.sources.isEmpty { result.sources = task.sources.map(\.source) }
            if !task.generates.isEmpty { result.generates = task.generates.map(\.source) }
            if task.isService {
                result.service = true
                result.ready = task.ready.map(ReadyProbeJSON.init)
            }
            result.runs_after = step.runsAfter
            result.runs_after_reason = step.runsAfterReason
            if let sbatch = Plan.sbatchArguments(step, workflow: workflow) {
                result.executor = ExecutorKind.slurm.rawValue
                result.sbatch = sbatch
            }
            if let limits = step.limits {
                result.limits = Limits(
                    run: limits.runSlots,
                    group: limits.group.map { Limits.GroupLimit(name: $0.name, concurrency: $0.concurrency) },
                    semaphores: limits.semaphores.map {
                        Limits.SemaphoreLimit(name: $0.name, weight: $0.weight, capacity: $0.capacity, family: $0.family,
                                              computed: $0.isComputed ? true : nil, pools: $0.pools)
                    })
            }
            if let resources = task.resources {
                result.resources = Resources(cpus: resources.cpus, memory_bytes: resources.memoryBytes, retry_memory_factor: task.retryResources?.memoryFactor)
            }
            if step.kind == .fanOut, let source = step.fanOutSource {
                result.fan_out = FanOutInfo(
                    count: step.fanOutCount, source: sourceText(source, axes: step.fanOutAxes), items: staticItems(source),
                    name_template: task.nameTemplate?.source, split: step.fanOutSplit?.text, axes: step.fanOutAxes,
                    members: members(step, source: source, template: task.nameTemplate, vars: vars))
            }
        }
        switch step.kind {
        case .group:
            result.members = step.members
            result.concurrency = step.concurrency
            result.sequential = step.sequential
            result.runs_after = step.runsAfter
            result.runs_after_reason = step.runsAfterReason
            if let when = step.groupWhen { result.when = when.rawValue }
            result.if = step.groupCondition?.value.description
            result.timeout_seconds = step.timers.timeout?.seconds
            if let source = step.fanOutSource {
                result.fan_out = FanOutInfo(
                    count: step.fanOutCount, source: sourceText(source, axes: step.fanOutAxes), items: staticItems(source), name_template: nil,
                    axes: step.fanOutAxes)
            }
        case .join:
            if let join = step.join {
                result.description = join.description
                result.wait = step.members
                result.need = join.need.value.description
                result.required = join.need.value.required(of: step.members.count)
                result.timeout_seconds = join.timeout?.value.seconds
                result.on_timeout = join.onTimeout.rawValue
                result.report = join.report?.map(\.text)
            }
        case .task, .fanOut:
            break
        }
        return result
    }

    private static func action(_ action: TaskAction) -> Action {
        switch action {
        case .run(let script):
            return Action(type: "run", script: script.source)
        case .sleep(.fixed(let duration)):
            return Action(type: "sleep", seconds: duration.seconds)
        case .sleep(.range(let low, let high)):
            return Action(type: "sleep", min_seconds: low.seconds, max_seconds: high.seconds)
        case .http(let request):
            return Action(
                type: "http", method: request.method, url: URLRedaction.redact(request.url.source),
                headers: Dictionary(request.headers.map { ($0.name, $0.value.source) }, uniquingKeysWith: { _, last in last }),
                body: request.body?.source, expect: request.expect)
        }
    }

    /// The members of a list or matrix known before the run (a range is described, not listed).
    private static func members(_ step: PlanStep, source: FanOutSource, template: Template?, vars: [Variable]) -> [Member]? {
        if case .range = source { return nil }
        guard let group = step.group,
              let names = MemberNaming.staticNames(group: group, source: source, template: template, axes: step.fanOutAxes, vars: vars) else { return nil }
        switch source {
        case .list(let items): return zip(names, items).map { Member(name: $0, item: Item(value: .text($1))) }
        case .records(let items): return zip(names, items).map { Member(name: $0, item: Item(value: $1)) }
        case .range, .expression: return nil
        }
    }

    private static func sourceText(_ source: FanOutSource, axes: [String]?) -> String {
        switch source {
        case .list: return "list"
        case .records: return axes == nil ? "records" : "matrix"
        case .range(let low, let high): return "range \(low)..\(high)"
        case .expression(let template): return template.source
        }
    }

    /// Items known before the run: a literal list (a range is described, not listed).
    private static func staticItems(_ source: FanOutSource) -> [String]? {
        if case .list(let items) = source { return items }
        return nil
    }
}

// MARK: - Written directly (PrettyJSONWriter): each object's keys in UTF-8
// order, an absent optional left out, as the encoder's synthesized
// `encodeIfPresent` does.

extension PlanDocument {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            writer.key("dry_run"); writer.bool(dry_run)
            writer.key("finally"); writer.array { writer in for step in finally { writer.element(); step.write(to: &writer) } }
            writer.key("only"); writer.array(only)
            writer.key("schema"); writer.string(schema)
            writer.key("semaphores"); writer.array { writer in for semaphore in semaphores { writer.element(); semaphore.write(to: &writer) } }
            writer.key("stages"); writer.array { writer in for stage in stages { writer.element(); writer.array(stage) } }
            writer.key("steps"); writer.array { writer in for step in steps { writer.element(); step.write(to: &writer) } }
            writer.key("workflow"); workflow.write(to: &writer)
        }
    }
}

extension PlanDocument.WorkflowInfo {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            if let capacity { writer.key("capacity"); capacity.write(to: &writer) }
            if let computed_vars { writer.key("computed_vars"); writer.object(computed_vars) }
            if let description { writer.key("description"); writer.string(description) }
            writer.key("env"); writer.object(env)
            writer.key("fail_fast"); writer.bool(fail_fast)
            writer.key("file"); writer.string(file)
            writer.key("kill_grace_seconds"); writer.double(kill_grace_seconds)
            writer.key("max_parallel"); writer.int(max_parallel)
            writer.key("name"); writer.string(name)
            writer.key("shell"); writer.string(shell)
            if let timeout_seconds { writer.key("timeout_seconds"); writer.double(timeout_seconds) }
            writer.key("vars"); writer.object(vars)
        }
    }
}

extension PlanDocument.Capacity {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            writer.key("cpus"); writer.double(cpus)
            writer.key("cpus_auto"); writer.bool(cpus_auto)
            writer.key("memory_auto"); writer.bool(memory_auto)
            writer.key("memory_bytes"); writer.uint(memory_bytes)
        }
    }
}

extension PlanDocument.Resources {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            if let cpus { writer.key("cpus"); writer.double(cpus) }
            if let memory_bytes { writer.key("memory_bytes"); writer.uint(memory_bytes) }
            if let retry_memory_factor { writer.key("retry_memory_factor"); writer.double(retry_memory_factor) }
        }
    }
}

extension PlanDocument.Semaphore {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            writer.key("capacity"); writer.int(capacity)
            if let family { writer.key("family"); writer.bool(family) }
            writer.key("name"); writer.string(name)
            writer.key("users"); writer.array(users)
        }
    }
}

extension PlanDocument.Action {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            if let body { writer.key("body"); writer.string(body) }
            if let expect { writer.key("expect"); writer.int(expect) }
            if let headers { writer.key("headers"); writer.object(headers) }
            if let max_seconds { writer.key("max_seconds"); writer.double(max_seconds) }
            if let method { writer.key("method"); writer.string(method) }
            if let min_seconds { writer.key("min_seconds"); writer.double(min_seconds) }
            if let script { writer.key("script"); writer.string(script) }
            if let seconds { writer.key("seconds"); writer.double(seconds) }
            if let shebang { writer.key("shebang"); writer.string(shebang) }
            if let shell { writer.key("shell"); writer.array(shell) }
            writer.key("type"); writer.string(type)
            if let url { writer.key("url"); writer.string(url) }
        }
    }
}

extension PlanDocument.Limits {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            if let group {
                writer.key("group")
                writer.object { writer in
                    writer.key("concurrency"); writer.int(group.concurrency)
                    writer.key("name"); writer.string(group.name)
                }
            }
            writer.key("run"); writer.int(run)
            writer.key("semaphores")
            writer.array { writer in
                for semaphore in semaphores {
                    writer.element()
                    writer.object { writer in
                        writer.key("capacity"); writer.int(semaphore.capacity)
                        if let computed = semaphore.computed { writer.key("computed"); writer.bool(computed) }
                        if let family = semaphore.family { writer.key("family"); writer.string(family) }
                        writer.key("name"); writer.string(semaphore.name)
                        if let pools = semaphore.pools { writer.key("pools"); writer.array(pools) }
                        writer.key("weight"); writer.int(semaphore.weight)
                    }
                }
            }
        }
    }
}

extension PlanDocument.FanOutInfo {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            if let axes { writer.key("axes"); writer.array(axes) }
            if let count { writer.key("count"); writer.int(count) }
            if let items { writer.key("items"); writer.array(items) }
            if let members {
                writer.key("members")
                writer.array { writer in
                    for member in members {
                        writer.element()
                        writer.object { writer in
                            writer.key("item"); member.item.write(to: &writer)
                            writer.key("name"); writer.string(member.name)
                        }
                    }
                }
            }
            if let name_template { writer.key("name_template"); writer.string(name_template) }
            writer.key("source"); writer.string(source)
            if let split { writer.key("split"); writer.string(split) }
        }
    }
}

extension PlanDocument.Item {
    func write(to writer: inout PrettyJSONWriter) {
        switch value {
        case .text(let text), .literal(let text):
            writer.string(text)
        case .list(let items):
            writer.array { writer in
                for item in items { writer.element(); PlanDocument.Item(value: item).write(to: &writer) }
            }
        case .record(let fields):
            // The encoder's keyed container keeps a repeated key's last value.
            var last: [String: Int] = [:]
            for (offset, field) in fields.enumerated() { last[field.key] = offset }
            writer.object { writer in
                for (key, offset) in last.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                    writer.key(key)
                    PlanDocument.Item(value: fields[offset].value).write(to: &writer)
                }
            }
        }
    }
}

extension PlanDocument.ReadyProbeJSON {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            writer.key("check"); writer.string(check)
            writer.key("interval_seconds"); writer.double(interval_seconds)
            if let status { writer.key("status"); writer.int(status) }
            writer.key("target"); writer.string(target)
            writer.key("timeout_seconds"); writer.double(timeout_seconds)
        }
    }
}

extension PlanDocument.Step {
    func write(to writer: inout PrettyJSONWriter) {
        writer.object { writer in
            if let action { writer.key("action"); action.write(to: &writer) }
            if let aliases { writer.key("aliases"); writer.array(aliases) }
            if let backoff { writer.key("backoff"); writer.double(backoff) }
            writer.key("column"); writer.int(column)
            if let concurrency { writer.key("concurrency"); writer.int(concurrency) }
            if let continue_on_error { writer.key("continue_on_error"); writer.bool(continue_on_error) }
            if let cwd { writer.key("cwd"); writer.string(cwd) }
            if let description { writer.key("description"); writer.string(description) }
            if let env { writer.key("env"); writer.object(env) }
            if let executor { writer.key("executor"); writer.string(executor) }
            if let fan_out { writer.key("fan_out"); fan_out.write(to: &writer) }
            if let generates { writer.key("generates"); writer.array(generates) }
            if let group { writer.key("group"); writer.string(group) }
            if let group_timeout_seconds { writer.key("group_timeout_seconds"); writer.double(group_timeout_seconds) }
            if let `if` { writer.key("if"); writer.string(`if`) }
            writer.key("joins"); writer.array(joins)
            writer.key("kind"); writer.string(kind)
            if let limits { writer.key("limits"); limits.write(to: &writer) }
            writer.key("line"); writer.int(line)
            if let members { writer.key("members"); writer.array(members) }
            writer.key("name"); writer.string(name)
            if let need { writer.key("need"); writer.string(need) }
            writer.key("needs"); writer.array(needs)
            if let on_timeout { writer.key("on_timeout"); writer.string(on_timeout) }
            if let prompt { writer.key("prompt"); writer.string(prompt) }
            if let ready { writer.key("ready"); ready.write(to: &writer) }
            if let report { writer.key("report"); writer.array(report) }
            if let required { writer.key("required"); writer.int(required) }
            if let resources { writer.key("resources"); resources.write(to: &writer) }
            if let retries { writer.key("retries"); writer.int(retries) }
            if let retry_delay_seconds { writer.key("retry_delay_seconds"); writer.double(retry_delay_seconds) }
            if let runs_after { writer.key("runs_after"); writer.string(runs_after) }
            if let runs_after_reason { writer.key("runs_after_reason"); writer.string(runs_after_reason) }
            if let sbatch { writer.key("sbatch"); writer.array(sbatch) }
            if let sequential { writer.key("sequential"); writer.bool(sequential) }
            if let service { writer.key("service"); writer.bool(service) }
            if let sources { writer.key("sources"); writer.array(sources) }
            writer.key("stage"); writer.int(stage)
            if let timeout_seconds { writer.key("timeout_seconds"); writer.double(timeout_seconds) }
            if let uses {
                writer.key("uses")
                writer.object { writer in
                    writer.key("template"); writer.string(uses.template)
                    writer.key("with"); writer.object(uses.with)
                }
            }
            if let values {
                writer.key("values")
                writer.array { writer in
                    for value in values {
                        writer.element()
                        writer.object { writer in
                            writer.key("expression"); writer.string(value.expression)
                            writer.key("value"); writer.string(value.value)
                        }
                    }
                }
            }
            if let wait { writer.key("wait"); writer.array(wait) }
            if let when { writer.key("when"); writer.string(when) }
        }
    }
}
