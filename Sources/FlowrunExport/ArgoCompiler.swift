import FlowrunModel
import FlowrunPlanning

/// Compiles a plan into Argo documents; one instance per export. It knows
/// where each task, group and join lives (main DAG, a group's DAG, the
/// `finally` DAG) and carries every value a task reads into that DAG.
struct ArgoCompiler {
    let plan: Plan
    var workflow: Workflow { plan.workflow }
    let options: ArgoExportOptions
    var problems: ArgoExportProblems
    var semaphores: ArgoSemaphores

    var taskNames = ArgoNames()
    var templateNames: ArgoNames
    var parameterNames = ArgoNames()
    let entrypoint: String
    let exitHandler: String

    var scopeOf: [String: ArgoScope] = [:]
    var tasksByName: [String: TaskDefinition] = [:]
    var groupsByName: [String: GroupDefinition] = [:]
    var joinsByName: [String: JoinDefinition] = [:]

    /// Output keys someone reads, per producing task: its template declares them.
    var readKeys: [String: [String]] = [:]
    /// Fields published as global outputs for `finally`, per producer.
    var published: [String: [String]] = [:]
    /// Groups whose `results` someone reads.
    var resultsRead: Set<String> = []
    /// Values a group's DAG receives as input parameters: (name, tag in the main DAG).
    var groupInputs: [String: [(name: String, value: String)]] = [:]
    /// Values a group's DAG hands out: (name, tag inside the group's DAG).
    var groupOutputs: [String: [(name: String, parameter: String)]] = [:]
    /// Needs of members outside their group, waited for by the whole group.
    var groupExtraNeeds: [String: [Reference]] = [:]
    /// `env.NAME` reads, as workflow parameters: (parameter, NAME).
    var environmentParameters: [(name: String, variable: String)] = []
    /// `secrets:` names, and those flowrun takes from its caller (`ArgoCompiler+Secrets`).
    let secretNames: Set<String>
    let callerSecrets: [String]

    init(plan: Plan, options: ArgoExportOptions) {
        self.plan = plan
        self.options = options
        secretNames = Self.secretNames(of: plan.workflow)
        callerSecrets = Self.callerSecrets(of: plan.workflow)
        var problems = ArgoExportProblems(strict: options.strict)
        semaphores = ArgoSemaphores(workflow: plan.workflow, configMapName: ArgoNames.objectName(plan.workflow.name) + "-semaphores", problems: &problems)
        self.problems = problems
        templateNames = ArgoNames(reserving: [])
        entrypoint = templateNames.fresh("main")
        exitHandler = templateNames.fresh("finally")
        let workflow = plan.workflow
        for task in workflow.tasks { place(task, .main) }
        for group in workflow.groups {
            groupsByName[group.name] = group
            scopeOf[group.name] = .main
            for member in group.members { place(member, .group(group.name)) }
            if let fanOut = group.fanOut { place(fanOut.template, .group(group.name)) }
        }
        for join in workflow.joins {
            joinsByName[join.name] = join
            scopeOf[join.name] = .main
        }
        for task in workflow.finally { place(task, .finally) }
        // Names in file order, so the manifest is stable and readable.
        let groupNames = workflow.groups.flatMap { [$0.name] + $0.members.map(\.name) + ($0.fanOut.map { [$0.template.name] } ?? []) }
        for name in workflow.tasks.map(\.name) + groupNames + workflow.joins.map(\.name) + workflow.finally.map(\.name) {
            _ = argoName(name)
        }
        for variable in workflow.vars { _ = parameterNames.name(for: "vars." + variable.name, base: variable.name) }
    }

    private mutating func place(_ task: TaskDefinition, _ scope: ArgoScope) {
        tasksByName[task.name] = task
        scopeOf[task.name] = scope
    }

    /// The Argo DAG task name of a flowrun task, group or join. A fan-out
    /// template (`G[*]`) becomes `G-each`.
    mutating func argoName(_ name: String) -> String {
        if name.hasSuffix("[*]") { return taskNames.name(for: name, base: String(name.dropLast(3)) + "-each") }
        return taskNames.name(for: name)
    }

    /// The group a name belongs to, when it is a member or a fan-out template.
    func group(of name: String) -> String? {
        if case .group(let group) = scopeOf[name] { return group }
        return nil
    }

    // MARK: - Values

    /// Where `operand` can be read from a task in `scope`, threading it into
    /// or out of group DAGs, or through global outputs into `finally`.
    mutating func resolve(_ operand: Operand, in scope: ArgoScope) -> ArgoValue? {
        switch operand.path {
        case .variable(let name):
            return ArgoValue(path: ArgoPath("workflow", "parameters", parameterNames.name(for: "vars." + name, base: name)))
        case .environment(let name):
            let parameter = parameterNames.name(for: "env." + name, base: "env-" + name)
            if !environmentParameters.contains(where: { $0.variable == name }) {
                environmentParameters.append((parameter, name))
            }
            // A secret submitted as a parameter would be shown by the cluster: no `-p` for it,
            // the pods have it from the Kubernetes Secret (`checkSecrets`).
            let how = Self.secretNames(of: workflow).contains(name)
                ? "left empty: '\(name)' is a secret, never to be submitted as a parameter, which the cluster shows; "
                    + "read $\(name) in the script instead, which pods take from the Kubernetes Secret '\(secretObjectName)'"
                : "empty unless submitted with -p \(parameter)=VALUE"
            problems.emulate(
                "'\(operand.text)' reads flowrun's environment, which a cluster does not have: it becomes the workflow "
                    + "parameter '\(parameter)' (\(how))",
                at: operand.location)
            return ArgoValue(path: ArgoPath("workflow", "parameters", parameter))
        case .arguments:
            // Like flowrun's environment: a workflow parameter, empty unless the submit gives one.
            return argumentsParameter(
                "args", operand, "is the words after -- on a flowrun command line", note: ", one word however many it holds")
        case .argument(let number):
            // One word after --: a workflow parameter of its own.
            return argumentsParameter("args-\(number)", operand, "is a word after -- on a flowrun command line", note: "")
        case .item:
            return ArgoValue(path: ArgoPath("item", "item"))
        case .itemField(let path):
            // Each field read is its own key of the item (`outputs.num`): a tag
            // `{{item.outputs.num}}`, and nested `item['outputs']['num']` in an expression.
            return ArgoValue(path: ArgoPath("item", keys: path))
        case .index:
            return ArgoValue(path: ArgoPath("item", "index"))
        case .host:
            // The machine that exports is not the pod that runs, and a pod's facts are not in Argo's expressions.
            problems.refuse("'\(operand.text)' is a fact of the machine flowrun runs on; an Argo pod cannot read it (pick the value with a var instead)", at: operand.location)
            return nil
        case .task(let name, let field):
            return resolveTask(name, field, operand: operand, in: scope)
        case .group(let name, let field):
            guard let group = groupsByName[name] else { return nil }
            let argo = argoName(name)
            if scope == .finally {
                problems.refuse("'\(operand.text)': finally tasks run in Argo's exit handler, which cannot read a group's \(field.rawValue)", at: operand.location)
                return nil
            }
            switch field {
            case .status:
                return carry(ArgoValue(path: ArgoPath("tasks", argo, "status"), kind: .phase), from: .main, to: scope)
            case .results:
                guard group.members.isEmpty, group.fanOut != nil else {
                    problems.refuse(
                        "'\(operand.text)': Argo gathers results only from a fan-out; group '\(name)' has static members "
                            + "(read each member's outputs instead)",
                        at: operand.location)
                    return nil
                }
                resultsRead.insert(name)
                return carry(ArgoValue(path: ArgoPath("tasks", argo, "outputs", "parameters", "results")), from: .main, to: scope)
            }
        case .join(let name, let field):
            guard joinsByName[name] != nil else { return nil }
            let argo = argoName(name)
            let key = field == .timedOut ? "timed-out" : field.rawValue
            if scope == .finally { return publish(name, field: key, at: operand) }
            return carry(ArgoValue(path: ArgoPath("tasks", argo, "outputs", "parameters", key)), from: .main, to: scope)
        }
    }

    /// `${{ args }}` or `${{ args[N] }}`: words after `--`, which an Argo
    /// submit does not have, become a workflow parameter of their own (empty
    /// unless the submit gives one), said once per read.
    private mutating func argumentsParameter(_ base: String, _ operand: Operand, _ what: String, note: String) -> ArgoValue {
        let parameter = parameterNames.name(for: base, base: base)
        if !environmentParameters.contains(where: { $0.name == parameter }) {
            environmentParameters.append((parameter, ""))
        }
        problems.emulate(
            "'\(operand.text)' \(what), which an Argo submit does not have: it becomes the workflow "
                + "parameter '\(parameter)' (empty unless submitted with -p \(parameter)=VALUE)\(note)",
            at: operand.location)
        return ArgoValue(path: ArgoPath("workflow", "parameters", parameter))
    }


    private mutating func resolveTask(_ name: String, _ field: TaskField, operand: Operand, in scope: ArgoScope) -> ArgoValue? {
        guard let task = tasksByName[name], let home = scopeOf[name] else { return nil }
        let argo = argoName(name)
        if case .duration = field {
            problems.refuse("'\(operand.text)': Argo does not give a task's duration to other tasks", at: operand.location)
            return nil
        }
        if case .status = field {} else if !task.isRun {
            problems.refuse("'\(operand.text)': only a 'run:' task has \(field.text) on Argo (this one is \(task.actionName))", at: operand.location)
            return nil
        }
        if scope == .finally && home != .finally {
            if !task.isRun {
                problems.refuse("'\(operand.text)': finally tasks read other tasks through outputs their pods publish, and a \(task.actionName) task has no pod", at: operand.location)
                return nil
            }
            if case .output(let key) = field { addReadKey(key, of: name) }
            return publish(name, field: field.publishedName, at: operand)
        }
        let local: ArgoValue
        switch field {
        case .output(let key):
            addReadKey(key, of: name)
            local = ArgoValue(path: ArgoPath("tasks", argo, "outputs", "parameters", key))
        case .stdout: local = ArgoValue(path: ArgoPath("tasks", argo, "outputs", "result"))
        case .exitCode: local = ArgoValue(path: ArgoPath("tasks", argo, "exitCode"))
        case .status: local = ArgoValue(path: ArgoPath("tasks", argo, "status"), kind: .phase)
        case .duration: return nil
        }
        return carry(local, from: home, to: scope)
    }

    mutating func addReadKey(_ key: String, of task: String) {
        if !(readKeys[task] ?? []).contains(key) { readKeys[task, default: []].append(key) }
    }

    /// A value from the main phase for a `finally` task: Argo's exit handler
    /// cannot see the main DAG's tasks, so the producer publishes a global output.
    private mutating func publish(_ name: String, field: String, at operand: Operand) -> ArgoValue {
        if !(published[name] ?? []).contains(field) { published[name, default: []].append(field) }
        problems.emulate(
            "'\(operand.text)' is read in Argo's exit handler through the global output '\(globalName(name, field))', "
                + "which the task's pod publishes as it ends; a task that never ran publishes nothing",
            at: operand.location)
        return ArgoValue(path: ArgoPath("workflow", "outputs", "parameters", globalName(name, field)))
    }

    mutating func globalName(_ name: String, _ field: String) -> String {
        "flowrun-\(argoName(name))-\(field)"
    }

    /// `value`, as read in `home`, made readable in `scope`.
    private mutating func carry(_ value: ArgoValue, from home: ArgoScope, to scope: ArgoScope) -> ArgoValue? {
        if home == scope { return value }
        switch (home, scope) {
        case (.main, .group(let group)):
            return ArgoValue(path: ArgoPath("inputs", "parameters", input(value.path.tag, into: group)), kind: value.kind)
        case (.group(let group), .main):
            return ArgoValue(path: ArgoPath("tasks", argoName(group), "outputs", "parameters", output(value.path.tag, from: group)), kind: value.kind)
        case (.group(let source), .group(let target)):
            let outer = ArgoPath("tasks", argoName(source), "outputs", "parameters", output(value.path.tag, from: source))
            return ArgoValue(path: ArgoPath("inputs", "parameters", input(outer.tag, into: target)), kind: value.kind)
        default:
            return nil
        }
    }

    private mutating func input(_ tag: String, into group: String) -> String {
        if let existing = groupInputs[group]?.first(where: { $0.value == tag }) { return existing.name }
        let name = "in-\((groupInputs[group]?.count ?? 0) + 1)"
        groupInputs[group, default: []].append((name, tag))
        return name
    }

    private mutating func output(_ tag: String, from group: String) -> String {
        if let existing = groupOutputs[group]?.first(where: { $0.parameter == tag }) { return existing.name }
        let name = "out-\((groupOutputs[group]?.count ?? 0) + 1)"
        groupOutputs[group, default: []].append((name, tag))
        return name
    }
}

extension TaskDefinition {
    var isRun: Bool {
        if case .run = action { return true }
        return false
    }

    var actionName: String {
        switch action {
        case .run: return "run"
        case .sleep: return "sleep"
        case .http: return "http"
        }
    }
}

extension TaskField {
    var text: String {
        switch self {
        case .stdout: return "stdout"
        case .status: return "status"
        case .exitCode: return "exit_code"
        case .duration: return "duration"
        case .output(let key): return "outputs.\(key)"
        }
    }

    /// The global output's field name (`outputs-KEY`, `exit-code`, …).
    var publishedName: String {
        switch self {
        case .output(let key): return "outputs-\(key)"
        case .exitCode: return "exit-code"
        default: return text
        }
    }
}
