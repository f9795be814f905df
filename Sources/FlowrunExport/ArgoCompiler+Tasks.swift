import FlowrunModel
import FlowrunValues

/// The values one task reads, as input parameters of its template: the DAG
/// task passes each as an argument, the template hands it to the pod as an
/// environment variable (`FLOWRUN_VALUE_N`).
struct ArgoTaskValues {
    var arguments: [(name: String, value: String)] = []
    var phaseVariables: [String] = []

    /// The variable holding `value` (one per distinct value).
    mutating func variable(for value: String, phase: Bool) -> String {
        if let index = arguments.firstIndex(where: { $0.value == value }) { return "FLOWRUN_VALUE_\(index + 1)" }
        arguments.append(("v\(arguments.count + 1)", value))
        let variable = "FLOWRUN_VALUE_\(arguments.count)"
        if phase { phaseVariables.append(variable) }
        return variable
    }
}

/// What a task's template is built from, worked out while its DAG task is.
struct ArgoTaskPlan {
    var task: TaskDefinition
    var scope: ArgoScope
    var template: String
    var values = ArgoTaskValues()
    /// For `run:`: the script with each `${{ }}` replaced by `"$FLOWRUN_VALUE_N"`.
    var script = ""
    var environment: [(name: String, word: [ArgoScripts.ShellPart])] = []
    /// Secret `env:` entries: the pod reads them from the Kubernetes Secret, never from the script.
    var secretEnvironment: [String] = []
    var cwd: [ArgoScripts.ShellPart]?
    /// For `http:`: the url, headers and body with `{{inputs.parameters.vN}}`.
    var httpURL = ""
    var httpHeaders: [(name: String, value: String)] = []
    var httpBody: String?
    /// A group's or join's deadline this task's attempts must not outlive (emulated).
    var deadline: Duration?
    var isFanOut = false
    /// How the script starts: the wrapper's shell, the task's `shell:`, or its `#!` line.
    var launch: ScriptLaunch = .shellCommand
}

extension ArgoCompiler {
    /// Works out a task's values in its DAG: every `${{ }}` of `run`, `env`,
    /// `cwd`, `http` and a fan-out `name`.
    mutating func taskPlan(_ task: TaskDefinition, scope: ArgoScope, isFanOut: Bool) -> ArgoTaskPlan {
        var plan = ArgoTaskPlan(task: task, scope: scope, template: templateNames.name(for: task.name, base: argoName(task.name)))
        plan.isFanOut = isFanOut
        if let executor = task.executor, executor.value == .slurm {
            // Argo is the cluster: the task runs as a pod like any other.
            problems.note("executor: slurm is ignored by the Argo export: on Argo every run: task is a pod", at: executor.location)
        }
        let shellValue: (String) -> ArgoScripts.ShellPart = { .variable($0) }
        switch task.action {
        case .run(let template):
            plan.launch = ScriptLaunch.of(shell: task.shell, script: template.source)
            let readsValues: Bool
            (plan.script, readsValues) = scriptText(template, scope: scope, values: &plan.values, readsAsShell: plan.launch.readsAsShell)
            if plan.launch != .shellCommand, readsValues {
                problems.refuse("a script run by its own interpreter (shell: or #!) cannot take ${{ }} values on a cluster, where they arrive as shell variables: pass them through env: and read the environment", at: template.location)
            }
            for entry in workflow.env + task.env {
                if secretNames.contains(entry.name) {
                    if !plan.secretEnvironment.contains(entry.name) { plan.secretEnvironment.append(entry.name) }
                    continue
                }
                plan.environment.append((entry.name, shellParts(entry.value, scope: scope, values: &plan.values, what: "env.\(entry.name)")))
            }
            if let cwd = task.cwd { plan.cwd = shellParts(cwd, scope: scope, values: &plan.values, what: "cwd") }
            if isFanOut {
                let group = self.group(of: task.name) ?? task.name
                let name: [ArgoScripts.ShellPart] = task.nameTemplate.map { shellParts($0, scope: scope, values: &plan.values, what: "name") }
                    ?? [.literal(group + "["), shellValue(plan.values.variable(for: ArgoPath("item", "index").tag, phase: false)), .literal("]")]
                plan.environment.append(("FLOWRUN_TASK", name))
            }
            for entry in plan.environment where !entry.name.isShellIdentifier {
                problems.refuse("the environment variable name '\(entry.name)' cannot be set by a shell", at: task.location)
            }
        case .http(let request):
            plan.httpURL = argoText(request.url, scope: scope, values: &plan.values)
            plan.httpHeaders = request.headers.map { ($0.name, argoText($0.value, scope: scope, values: &plan.values)) }
            plan.httpBody = request.body.map { argoText($0, scope: scope, values: &plan.values) }
        case .sleep:
            break
        }
        return plan
    }

    /// A `run:` script with each value as its variable (`FLOWRUN_VALUE_N`),
    /// written for its shell context as flowrun quotes values (SPEC §11):
    /// `"$V"` as a word, `${V}` inside double quotes or a heredoc, `'"${V}"'`
    /// inside single quotes. A template parameter's text is written in place.
    mutating func scriptText(_ template: Template, scope: ArgoScope, values: inout ArgoTaskValues, readsAsShell: Bool) -> (String, readsValues: Bool) {
        let segments = template.segments
        var points = readsAsShell && segments.count > 1 ? ShellContextScanner.insertionPoints(in: segments)[...] : []
        var text = ""
        var readsValues = false
        for segment in segments {
            switch segment {
            case .text(let literal):
                checkLiteral(literal, at: template.location, what: "the script")
                text += literal
            case .expression(let expression, let location):
                let point = points.popFirst() ?? ShellInsertionPoint(.word)
                if case .string(let literal) = expression {
                    checkLiteral(literal, at: location, what: "the script")
                    do throws(ShellQuoting.Refusal) {
                        text += readsAsShell ? try ShellQuoting.text(literal, at: point, literal: true) : ShellQuoting.word(literal)
                    } catch {
                        problems.refuse("the value '\(literal)' \(error.reason)", at: location)
                    }
                    continue
                }
                guard let (value, phase) = argumentValue(expression, scope: scope, at: location) else { continue }
                readsValues = true
                let name = values.variable(for: value, phase: phase)
                switch point.insertion {
                case .doubleQuoted, .heredoc(_, quoted: false, _), .comment: text += "${\(name)}"
                case .singleQuoted: text += "'\"${\(name)}\"'"
                case .dollarSingleQuoted: text += "'\"${\(name)}\"$'"
                case .heredoc(_, quoted: true, _):
                    problems.refuse("a value in a heredoc with a quoted delimiter reaches the pod as a variable, which such a heredoc does not expand: unquote the delimiter", at: location)
                default: text += "\"$\(name)\""
                }
            }
        }
        return (text, readsValues)
    }

    /// A template as shell parts: literal text and `FLOWRUN_VALUE_N` variables.
    mutating func shellParts(_ template: Template, scope: ArgoScope, values: inout ArgoTaskValues, what: String) -> [ArgoScripts.ShellPart] {
        var parts: [ArgoScripts.ShellPart] = []
        for segment in template.segments {
            switch segment {
            case .text(let text):
                checkLiteral(text, at: template.location, what: what)
                parts.append(.literal(text))
            case .expression(let expression, let location):
                if let (value, phase) = argumentValue(expression, scope: scope, at: location) {
                    parts.append(.variable(values.variable(for: value, phase: phase)))
                }
            }
        }
        // Merge neighbouring literals so shell words stay short.
        var merged: [ArgoScripts.ShellPart] = []
        for part in parts {
            if case .literal(let text) = part, case .literal(let previous)? = merged.last {
                merged[merged.count - 1] = .literal(previous + text)
            } else {
                merged.append(part)
            }
        }
        return merged
    }

    /// A template as Argo text with `{{inputs.parameters.vN}}` (for `http:`,
    /// where flowrun inserts values as text too).
    mutating func argoText(_ template: Template, scope: ArgoScope, values: inout ArgoTaskValues) -> String {
        argoText(template, what: "the request", scope: scope) { tag in
            let variable = values.variable(for: tag, phase: false)
            return "{{inputs.parameters.v\(variable.dropFirst("FLOWRUN_VALUE_".count))}}"
        }
    }

    /// A template as Argo text: literals checked and kept, each `${{ }}` as
    /// its tag (a phase operand as its status), passed through `insert`.
    mutating func argoText(_ template: Template, what: String, scope: ArgoScope, insert: (String) -> String) -> String {
        var text = ""
        for segment in template.segments {
            switch segment {
            case .text(let literal):
                checkLiteral(literal, at: template.location, what: what)
                text += literal
            case .expression(let expression, let location):
                guard let (value, phase) = argumentValue(expression, scope: scope, at: location) else { continue }
                if phase, case .operand(let operand) = expression, let resolved = resolve(operand, in: scope) {
                    text += insert("{{=" + ArgoExpression.status(resolved.path.accessor) + "}}")
                } else {
                    text += insert(value)
                }
            }
        }
        return text
    }

    /// An argument's value for one `${{ }}`: a tag for a plain operand, an
    /// expression template for anything computed.
    mutating func argumentValue(_ expression: Expression, scope: ArgoScope, at location: SourceLocation) -> (String, Bool)? {
        if case .operand(let operand) = expression {
            guard let value = resolve(operand, in: scope) else { return nil }
            return (value.path.tag, value.kind == .phase)
        }
        if let problem = ArgoExpression.unsupported(expression) {
            problems.refuse(problem, at: location)
            return nil
        }
        guard let text = ArgoExpression.value(expression, { resolve($0, in: scope) }) else { return nil }
        return ("{{=" + text + "}}", false)
    }

    /// Argo reads `{{…}}` anywhere in a template as one of its variables.
    mutating func checkLiteral(_ text: String, at location: SourceLocation, what: String) {
        if text.contains("{{") {
            problems.refuse("\(what) contains '{{', which Argo would read as one of its own variables", at: location)
        }
    }

    /// `if:` as a DAG task's `when`, evaluated by Argo with its expression language.
    mutating func when(_ task: TaskDefinition, scope: ArgoScope) -> String? {
        when(task.condition, scope: scope)
    }

    /// A task's or a group's `if:` as Argo's `when`.
    mutating func when(_ condition: Located<Expression>?, scope: ArgoScope) -> String? {
        guard let condition else { return nil }
        // Argo fills in an item's keys when it expands the fan-out, after the
        // other values: one condition can read the item or the rest, not both.
        let operands = condition.value.operands
        let itemOperands = operands.filter { $0.path == .item || $0.path == .index || $0.path.isItemField }
        if let first = itemOperands.first, let other = operands.first(where: { !($0.path == .item || $0.path == .index || $0.path.isItemField) }) {
            problems.refuse(
                "'if:' in a fan-out template reads '\(first.text)' and '\(other.text)'; Argo evaluates an item's values apart from the others: "
                    + "split the test (read '\(other.text)' in the group's 'if:', or test it in the script)",
                at: first.location)
            return nil
        }
        if let problem = ArgoExpression.unsupported(condition.value) {
            problems.refuse(problem, at: condition.location)
            return nil
        }
        guard let text = ArgoExpression.condition(condition.value, { resolve($0, in: scope) }) else { return nil }
        return "{{=" + text + "}}"
    }

    /// The `depends` of a task, group or join in `scope`. A need that lives in
    /// another DAG is emulated: inside a group, the whole group waits for it;
    /// in the main DAG, a group member is waited for as its whole group.
    mutating func dependsNeeds(_ needs: [Reference], scope: ArgoScope, owner: String) -> [ArgoDepends.Need] {
        var result: [ArgoDepends.Need] = []
        for need in needs {
            guard let home = scopeOf[need.value] else { continue }
            var target = need.value
            if home != scope {
                switch (home, scope) {
                case (.group(let group), .main):
                    problems.emulate("'\(owner)' needs '\(need.value)', a member of group '\(group)': Argo cannot reach into a group's DAG, so it waits for the whole group", at: need.location)
                    target = group
                case (_, .group(let group)):
                    problems.emulate("'\(need.value)' is outside group '\(group)': Argo cannot reach out of a group's DAG, so the whole group waits for it", at: need.location)
                    if case .group(let other) = home, other != group {
                        groupExtraNeeds[group, default: []].append(Reference(other, at: need.location))
                    } else {
                        groupExtraNeeds[group, default: []].append(need)
                    }
                    continue
                default:
                    continue
                }
            }
            let name = argoName(target)
            if result.contains(where: { $0.name == name }) { continue }
            result.append(ArgoDepends.Need(name: name, continueOnError: tasksByName[target]?.continueOnError ?? false))
        }
        return result
    }

    /// A DAG task that runs `plan`'s template.
    mutating func dagTask(_ plan: ArgoTaskPlan, needs: [Reference], items: ManifestValue? = nil, itemsFrom: String? = nil) -> ManifestValue {
        let task = plan.task
        var entry = ManifestMap()
        entry.set("name", argoName(task.name))
        entry.set("template", plan.template)
        let owner = self.group(of: task.name).map { task.name == ($0 + "[*]") ? "the fan-out of '\($0)'" : "'\(task.name)'" } ?? "'\(task.name)'"
        var needList = dependsNeeds(needs, scope: plan.scope, owner: owner)
        if let itemsFrom { needList.insert(ArgoDepends.Need(name: itemsFrom, continueOnError: false), at: 0) }
        let (depends, never) = ArgoDepends.expression(needList, when: task.when)
        entry.set("depends", depends)
        entry.set("when", never ? "false" : when(task, scope: plan.scope))
        if task.continueOnError { entry.set("continueOn", .map([("failed", .bool(true)), ("error", .bool(true))])) }
        var arguments = plan.values.arguments.map { argument in ManifestValue.map([("name", .string(argument.name)), ("value", .string(argument.value))]) }
        if plan.isFanOut, task.isRun {
            arguments.append(.map([("name", .string("item")), ("value", .string(ArgoPath("item", "item").tag))]))
            arguments.append(.map([("name", .string("index")), ("value", .string(ArgoPath("item", "index").tag))]))
        }
        if !arguments.isEmpty { entry.set("arguments", .map([("parameters", .list(arguments))])) }
        entry.set("withItems", items)
        entry.set("withParam", itemsFrom.map { ArgoPath("tasks", $0, "outputs", "result").tag })
        return entry.value
    }
}

extension String {
    var isShellIdentifier: Bool {
        guard let first = unicodeScalars.first, first == "_" || ("A"..."Z").contains(first) || ("a"..."z").contains(first) else { return false }
        return unicodeScalars.allSatisfy { $0 == "_" || ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) }
    }
}
