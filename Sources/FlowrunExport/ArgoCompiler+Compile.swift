import FlowrunModel

/// The order of the work: group DAGs first (so the values they read are
/// known when their DAG task is written), then the main DAG, `finally`,
/// and last the templates of producers, which must declare what others read.
extension ArgoCompiler {
    mutating func compileTemplates() -> [ManifestValue] {
        var plans: [ArgoTaskPlan] = []
        var groupTemplates: [ManifestValue] = []
        var extraTemplates: [ManifestValue] = []
        let joinDeadlines = joinDeadlinesOfMembers()
        if let executor = workflow.executor, executor.value == .slurm {
            problems.note("executor: slurm is ignored by the Argo export: on Argo every run: task is a pod", at: executor.location)
        }

        var groupTasks: [String: [ManifestValue]] = [:]
        for group in workflow.groups {
            if let timeout = group.timeout {
                problems.emulate(
                    "Argo has no deadline for a group's DAG: each member's attempts are capped at \(timeout.value.text) and its "
                        + "retries stop after \(timeout.value.text) from its first attempt, counted per member rather than from the group's start",
                    at: timeout.location)
            }
            var tasks: [ManifestValue] = []
            // sequential: true — each member also waits for the one written before it.
            var previous: Reference?
            if group.sequential { emulateSequence(of: group) }
            for member in group.members {
                var plan = taskPlan(member, scope: .group(group.name), isFanOut: false)
                plan.deadline = shortest(group.timeout?.value, joinDeadlines[member.name])
                tasks.append(dagTask(plan, needs: member.needs.filter { $0.value != group.name } + (previous.map { [$0] } ?? [])))
                plans.append(plan)
                if group.sequential { previous = Reference(member.name, at: member.location) }
            }
            if let fanOut = group.fanOut {
                var plan = taskPlan(fanOut.template, scope: .group(group.name), isFanOut: true)
                plan.deadline = shortest(group.timeout?.value, nil)
                let needs = fanOut.template.needs.filter { $0.value != group.name } + (previous.map { [$0] } ?? [])
                switch fanOut.source {
                case .list(let items):
                    tasks.append(dagTask(plan, needs: needs, items: Self.items(items)))
                case .records(let items):
                    if fanOut.template.nameTemplate == nil, let entry = plan.environment.firstIndex(where: { $0.name == "FLOWRUN_TASK" }) {
                        // Named as flowrun names it, `test[os=linux,py=3.12]`, not by index.
                        plan.environment[entry].word = [.variable(plan.values.variable(for: ArgoPath("item", Self.memberNameKey).tag, phase: false))]
                    }
                    tasks.append(dagTask(plan, needs: needs, items: recordItems(items, group: group, template: fanOut.template)))
                case .range(let low, let high):
                    tasks.append(dagTask(plan, needs: needs, items: Self.items(low <= high ? (low...high).map(String.init) : [])))
                case .expression(let template):
                    let itemsTask = taskNames.fresh(argoName(group.name) + "-items")
                    let itemsTemplateName = templateNames.fresh(argoName(group.name) + "-items")
                    let value = argumentTemplate(template, scope: .group(group.name))
                    tasks.append(.map([
                        ("name", .string(itemsTask)), ("template", .string(itemsTemplateName)),
                        ("arguments", .map([("parameters", .list([Self.parameter("items", value)]))])),
                    ]))
                    tasks.append(dagTask(plan, needs: needs, itemsFrom: itemsTask))
                    checkItemFields(of: fanOut.template)
                    extraTemplates.append(itemsTemplate(name: itemsTemplateName, fields: Self.readItemFields(of: fanOut.template)))
                }
                plans.append(plan)
            }
            groupTasks[group.name] = tasks
        }

        var mainTasks: [ManifestValue] = []
        var joinTemplates: [ManifestValue] = []
        for step in plan.steps where step.group == nil {
            switch step.kind {
            case .task:
                guard let task = tasksByName[step.name] else { continue }
                var plan = taskPlan(task, scope: .main, isFanOut: false)
                plan.deadline = joinDeadlines[task.name]
                mainTasks.append(dagTask(plan, needs: task.needs))
                plans.append(plan)
            case .group:
                guard let group = groupsByName[step.name] else { continue }
                mainTasks.append(groupDagTask(group))
            case .join:
                guard let join = joinsByName[step.name] else { continue }
                let (entry, template) = joinDagTask(join)
                mainTasks.append(entry)
                joinTemplates.append(template)
            case .fanOut:
                continue
            }
        }

        var finallyTasks: [ManifestValue] = []
        for step in plan.finallySteps {
            guard let task = tasksByName[step.name] else { continue }
            let plan = taskPlan(task, scope: .finally, isFanOut: false)
            finallyTasks.append(dagTask(plan, needs: task.needs))
            plans.append(plan)
        }

        // Producers last: what others read is known now.
        for group in workflow.groups {
            groupTemplates.append(groupTemplate(group, tasks: groupTasks[group.name] ?? []))
        }
        let taskTemplates = plans.map { taskTemplate($0) }
        var templates: [ManifestValue] = [.map([("name", .string(entrypoint)), ("dag", dag(mainTasks))])]
        templates += groupTemplates + taskTemplates + joinTemplates + extraTemplates
        if !finallyTasks.isEmpty {
            templates.append(.map([("name", .string(exitHandler)), ("dag", .map([("failFast", .bool(false)), ("tasks", .list(finallyTasks))]))]))
        }
        return templates
    }

    /// `withItems` of records: `{index, item, KEY: value, …}` — `item` is the
    /// record's compact JSON (`${{ item }}`), each top-level field its own
    /// key (`${{ item.KEY }}` → `{{item.KEY}}`), and each nested field read
    /// its dotted key (`${{ item.a.b }}` → `{{item.a.b}}`): Argo reads one
    /// level of an item's keys. Fields named `index` or `item` are refused.
    mutating func recordItems(_ items: [FanOutItem], group: GroupDefinition, template: TaskDefinition) -> ManifestValue {
        checkItemFields(of: template)
        let nested = nestedItemFields(of: template)
        let indexNamed = MemberNaming.indexNamed(.records(items), axes: group.fanOut?.matrixAxes)
        return .list(items.enumerated().map { offset, item in
            let name = indexNamed.contains(offset)
                ? "\(group.name)[\(offset)]"
                : MemberNaming.defaultName(group: group.name, item: item, index: offset, fieldNames: true, axes: group.fanOut?.matrixAxes)
            var pairs: [(key: String, value: ManifestValue)] = [
                ("index", .string(String(offset))), ("item", .string(ArgoItemJSON.text(item))), (Self.memberNameKey, .string(name)),
            ]
            for field in item.fields where field.key != "index" && field.key != "item" && field.key != Self.memberNameKey {
                pairs.append((field.key, .string(field.value.scalarText ?? ArgoItemJSON.text(field.value))))
            }
            for path in nested {
                let value = item.field(at: path)
                pairs.append((path.joined(separator: "."), .string(value.map { $0.scalarText ?? ArgoItemJSON.text($0) } ?? "")))
            }
            return .map(pairs)
        })
    }

    /// An item's `index` and `item` keys are flowrun's own on Argo.
    mutating func checkItemFields(of template: TaskDefinition) {
        for operand in template.itemFieldOperands {
            guard case .itemField(let path) = operand.path, path[0] == "index" || path[0] == "item" else { continue }
            problems.refuse("'\(operand.text)': on Argo an item's '\(path[0])' key holds flowrun's own \(path[0]); rename the field", at: operand.location)
        }
    }

    /// The nested item fields a fan-out template reads (`item.a.b`), each once, in order.
    func nestedItemFields(of template: TaskDefinition) -> [[String]] {
        var paths: [[String]] = []
        for operand in template.itemFieldOperands {
            guard case .itemField(let path) = operand.path, path.count > 1, !paths.contains(path) else { continue }
            paths.append(path)
        }
        return paths
    }

    /// Every item field a fan-out template reads (`item.a`, `item.a.b`), each once, in order.
    static func readItemFields(of template: TaskDefinition) -> [[String]] {
        var paths: [[String]] = []
        for operand in template.itemFieldOperands {
            guard case .itemField(let path) = operand.path, !paths.contains(path) else { continue }
            paths.append(path)
        }
        return paths
    }

    /// The key of a record's withItems entry that holds its member name.
    static let memberNameKey = "flowrun_name"

    /// `withItems`: one `{index, item}` object per item, so members get both.
    static func items(_ items: [String]) -> ManifestValue {
        .list(items.enumerated().map { .map([("index", .string(String($0.offset))), ("item", .string($0.element))]) })
    }

    private func shortest(_ a: Duration?, _ b: Duration?) -> Duration? {
        switch (a, b) {
        case (let a?, let b?): return min(a, b)
        default: return a ?? b
        }
    }

    /// A join's deadline, handed to each member task (emulated: see `joinDagTask`).
    private func joinDeadlinesOfMembers() -> [String: Duration] {
        var deadlines: [String: Duration] = [:]
        for join in workflow.joins {
            guard let timeout = join.timeout?.value else { continue }
            for member in join.wait {
                let names = groupsByName[member.value].map { $0.members.map(\.name) + ($0.fanOut.map { [$0.template.name] } ?? []) } ?? [member.value]
                for name in names where tasksByName[name] != nil {
                    deadlines[name] = shortest(deadlines[name], timeout)
                }
            }
        }
        return deadlines
    }

    /// A template's text with values as `{{…}}` tags (a fan-out's `foreach`).
    mutating func argumentTemplate(_ template: Template, scope: ArgoScope) -> String {
        argoText(template, what: "foreach", scope: scope) { $0 }
    }

    /// The group's DAG task in the main DAG: its needs, and the values its members read.
    private mutating func groupDagTask(_ group: GroupDefinition) -> ManifestValue {
        var entry = ManifestMap()
        entry.set("name", argoName(group.name))
        entry.set("template", templateNames.name(for: "group " + group.name, base: argoName(group.name)))
        if group.members.contains(where: { $0.when != .success }) || group.fanOut?.template.when ?? .success != .success, !group.needs.isEmpty {
            problems.emulate(
                "the group's needs are checked for success before any member starts; a member's 'when:' applies to its own needs only",
                at: group.needs[0].location)
        }
        let needs = dependsNeeds(group.needs + (groupExtraNeeds[group.name] ?? []), scope: .main, owner: "group '\(group.name)'")
        // A group's own when:/if: (SPEC §15) are the DAG task's depends and when, as a task's.
        let (depends, never) = ArgoDepends.expression(needs, when: group.when)
        entry.set("depends", depends)
        entry.set("when", never ? "false" : when(group.condition, scope: .main))
        if let inputs = groupInputs[group.name] {
            entry.set("arguments", .map([("parameters", .list(inputs.map { Self.parameter($0.name, $0.value) }))]))
        }
        return entry.value
    }

    /// A join as a small check task that runs once every member has ended.
    /// A quorum below `all` cannot fire early, and a deadline is emulated by
    /// capping each member's attempts; both are reported as emulations.
    private mutating func joinDagTask(_ join: JoinDefinition) -> (ManifestValue, ManifestValue) {
        let members = dependsNeeds(join.wait, scope: .main, owner: "join '\(join.name)'")
        if join.need.value != .all, join.need.value.required(of: members.count) < members.count {
            problems.emulate(
                "Argo cannot complete a join early at its quorum: the join waits for every member to end, then checks that "
                    + "\(join.need.value.required(of: members.count)) of \(members.count) succeeded; no member is cancelled",
                at: join.need.location)
        }
        if let timeout = join.timeout {
            problems.emulate(
                "Argo cannot stop waiting at a join's deadline: each member's attempts are capped at \(timeout.value.text) from its own start, "
                    + "and a member that did not succeed counts as missing, so the join ends timed out (on_timeout: \(join.onTimeout.rawValue))",
                at: timeout.location)
        }
        var report: [(label: String, argument: String)] = []
        for item in join.report ?? [] {
            guard let path = reportPath(item) else { continue }
            let operand = Operand(text: item.text, path: path, location: item.location)
            guard let value = resolve(operand, in: .main) else { continue }
            report.append((item.text, value.kind == .phase ? "{{=" + ArgoExpression.status(value.path.accessor) + "}}" : value.path.tag))
        }
        var entry = ManifestMap()
        entry.set("name", argoName(join.name))
        let template = joinTemplate(join, members: members.map { ($0.name, $0.continueOnError) }, report: report)
        entry.set("template", template["name"].flatMap { if case .string(let name) = $0 { name } else { nil } })
        entry.set("depends", ArgoDepends.expression(members.map { ArgoDepends.Need(name: $0.name, continueOnError: false) }, when: .always).depends)
        let arguments = members.enumerated().map { Self.parameter("m\($0.offset + 1)", ArgoPath("tasks", $0.element.name, "status").tag) }
            + report.enumerated().map { Self.parameter("r\($0.offset + 1)", $0.element.argument) }
        entry.set("arguments", .map([("parameters", .list(arguments))]))
        return (entry.value, template)
    }

    private func reportPath(_ item: ReportItem) -> OperandPath? {
        if groupsByName[item.member] != nil { return GroupField(rawValue: item.field).map { .group(item.member, $0) } }
        if joinsByName[item.member] != nil { return JoinField(rawValue: item.field).map { .join(item.member, $0) } }
        switch item.field {
        case "stdout": return .task(item.member, .stdout)
        case "status": return .task(item.member, .status)
        case "exit_code": return .task(item.member, .exitCode)
        case "duration": return .task(item.member, .duration)
        default:
            guard item.field.hasPrefix("outputs.") else { return nil }
            return .task(item.member, .output(String(item.field.dropFirst("outputs.".count))))
        }
    }
}
