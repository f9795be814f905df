import FlowrunModel

/// The templates: one per task (a script, an HTTP request or a suspend),
/// one nested DAG per group, one check per join, and the item list of a
/// dynamic fan-out.
extension ArgoCompiler {
    static func parameter(_ name: String, _ value: String? = nil) -> ManifestValue {
        var map = ManifestMap()
        map.set("name", name)
        map.set("value", value)
        return map.value
    }

    static func env(_ name: String, _ value: String) -> ManifestValue {
        .map([("name", .string(name)), ("value", .string(value))])
    }

    /// A secret's variable read from the Kubernetes Secret (`secretKeyRef`):
    /// its value is never in the manifest. `optional` for a secret flowrun
    /// takes from its caller's environment, which may not have it either.
    func secretEnv(_ name: String, optional: Bool) -> ManifestValue {
        var reference: [(key: String, value: ManifestValue)] = [("name", .string(secretObjectName)), ("key", .string(name))]
        if optional { reference.append(("optional", .bool(true))) }
        return .map([("name", .string(name)), ("valueFrom", .map([("secretKeyRef", .map(reference))]))])
    }

    private static func fromPath(_ name: String, _ path: String, default fallback: String, global: String?) -> ManifestValue {
        var map = ManifestMap()
        map.set("name", name)
        map.set("valueFrom", .map([("path", .string(path)), ("default", .string(fallback))]))
        map.set("globalName", global)
        return map.value
    }

    /// The template of one task.
    mutating func taskTemplate(_ plan: ArgoTaskPlan) -> ManifestValue {
        let task = plan.task
        var template = ManifestMap()
        template.set("name", plan.template)
        var inputs = plan.values.arguments.map { Self.parameter($0.name) }
        if plan.isFanOut, task.isRun { inputs += [Self.parameter("item"), Self.parameter("index")] }
        if !inputs.isEmpty { template.set("inputs", .map([("parameters", .list(inputs))])) }
        var attemptTimeout = task.timeout?.value ?? (plan.scope == .finally ? .seconds(300) : nil)
        if let deadline = plan.deadline { attemptTimeout = min(attemptTimeout ?? deadline, deadline) }

        switch task.action {
        case .run:
            template.set("outputs", runOutputs(task))
            setLimits(&template, plan, attemptTimeout)
            var environment: [ManifestValue] = []
            if !plan.isFanOut { environment.append(Self.env("FLOWRUN_TASK", task.name)) }
            environment.append(Self.env("FLOWRUN_RUN_ID", "{{workflow.name}}"))
            if task.retries > 0 { environment.append(Self.env("FLOWRUN_RETRIES", "{{retries}}")) }
            if plan.isFanOut {
                environment.append(Self.env("FLOWRUN_ITEM", "{{inputs.parameters.item}}"))
                environment.append(Self.env("FLOWRUN_INDEX", "{{inputs.parameters.index}}"))
            }
            for (offset, argument) in plan.values.arguments.enumerated() {
                environment.append(Self.env("FLOWRUN_VALUE_\(offset + 1)", "{{inputs.parameters.\(argument.name)}}"))
            }
            for name in plan.secretEnvironment { environment.append(secretEnv(name, optional: false)) }
            for name in callerSecrets where !plan.secretEnvironment.contains(name) { environment.append(secretEnv(name, optional: true)) }
            let publishes = !(published[task.name] ?? []).filter { !$0.hasPrefix("outputs-") }.isEmpty
            let source = ArgoScripts.wrapper(ArgoScripts.Wrapper(
                shell: workflow.shellCommand, script: plan.script, launch: plan.launch, phaseVariables: plan.values.phaseVariables,
                environment: plan.environment, cwd: plan.cwd, retries: task.retries > 0,
                writesResult: plan.isFanOut && group(of: task.name).map { resultsRead.contains($0) } == true,
                publishesStash: publishes, readsOutputs: !(readKeys[task.name] ?? []).isEmpty))
            if task.isService {
                // Its dependents start when the container is ready; Argo stops it when the DAG is done.
                template.set("daemon", .bool(true))
                template.set("script", script(environment: environment, source: source, readiness: readinessProbe(of: task)))
            } else {
                template.set("script", script(environment: environment, source: source))
            }
        case .sleep(.fixed(let duration)):
            setLimits(&template, plan, attemptTimeout)
            template.set("suspend", .map([("duration", .string(duration.text))]))
        case .sleep(.range(let low, let high)):
            problems.emulate(
                "Argo cannot wait a random time without a pod: this sleep runs as a pod that sleeps \(low.text)..\(high.text)",
                at: task.location)
            setLimits(&template, plan, attemptTimeout)
            let seconds = "awk 'BEGIN { srand(); printf \"%.3f\", \(low.seconds.formatted) + rand() * \((high - low).seconds.formatted) }'"
            template.set("script", script(environment: [], source: "sleep \"$(\(seconds))\"\n"))
        case .http(let request):
            setLimits(&template, plan, attemptTimeout)
            var http = ManifestMap()
            http.set("url", plan.httpURL)
            http.set("method", request.method)
            if !plan.httpHeaders.isEmpty {
                http.set("headers", .list(plan.httpHeaders.map { .map([("name", .string($0.name)), ("value", .string($0.value))]) }))
            }
            http.set("body", plan.httpBody)
            http.set("successCondition", "response.statusCode == \(request.expect)")
            template.set("http", http.value)
        }
        return template.value
    }

    private func script(environment: [ManifestValue], source: String, readiness: ManifestValue? = nil) -> ManifestValue {
        var script = ManifestMap()
        script.set("image", options.image)
        script.set("command", .list([.string("/bin/sh")]))
        if !environment.isEmpty { script.set("env", .list(environment)) }
        script.set("source", source)
        script.set("readinessProbe", readiness)
        return script.value
    }

    /// Output keys someone reads, the stash fields `finally` reads, and a
    /// fan-out member's `results` entry.
    private mutating func runOutputs(_ task: TaskDefinition) -> ManifestValue? {
        let directory = ArgoScripts.directory
        let fields = published[task.name] ?? []
        var parameters: [ManifestValue] = []
        for key in readKeys[task.name] ?? [] {
            let global = fields.contains("outputs-\(key)") ? globalName(task.name, "outputs-\(key)") : nil
            parameters.append(Self.fromPath(key, "\(directory)/outputs/\(key)", default: "", global: global))
        }
        for field in fields where !field.hasPrefix("outputs-") {
            let (file, fallback) = field == "status" ? ("status", "failed") : field == "exit-code" ? ("exit-code", "") : ("stdout", "")
            parameters.append(Self.fromPath("flowrun-\(field)", "\(directory)/\(file)", default: fallback, global: globalName(task.name, field)))
        }
        if let group = group(of: task.name), resultsRead.contains(group), task.name.hasSuffix("[*]") {
            parameters.append(Self.fromPath("flowrun-result", "\(directory)/result.json", default: "{\"status\":\"failed\"}", global: nil))
        }
        return parameters.isEmpty ? nil : .map([("parameters", .list(parameters))])
    }

    /// `timeout`, `retryStrategy` and `synchronization` of a task's template.
    private mutating func setLimits(_ template: inout ManifestMap, _ plan: ArgoTaskPlan, _ attemptTimeout: Duration?) {
        let task = plan.task
        template.set("timeout", attemptTimeout.map(\.text))
        if task.retries > 0 {
            var backoff = ManifestMap()
            backoff.set("duration", task.retryDelay.text)
            var factor = task.backoff
            if factor != factor.rounded() || factor < 1 {
                factor = max(1, factor.rounded())
                problems.emulate(
                    "Argo's backoff factor is a whole number: backoff \(task.backoff.formatted) of '\(task.name)' becomes \(factor.formatted)",
                    at: task.location)
            }
            backoff.set("factor", String(Int(factor)))
            backoff.set("maxDuration", plan.deadline.map(\.text))
            var retry = ManifestMap()
            retry.set("limit", String(task.retries))
            retry.set("retryPolicy", "Always")
            retry.set("backoff", backoff.value)
            template.set("retryStrategy", retry.value)
        }
        template.set("synchronization", semaphores.synchronization(for: task))
    }

    /// A group's nested DAG: `concurrency` as `parallelism`, values in as
    /// inputs, values read outside as outputs.
    mutating func groupTemplate(_ group: GroupDefinition, tasks: [ManifestValue]) -> ManifestValue {
        var template = ManifestMap()
        template.set("name", templateNames.name(for: "group " + group.name, base: argoName(group.name)))
        if let inputs = groupInputs[group.name] {
            template.set("inputs", .map([("parameters", .list(inputs.map { Self.parameter($0.name) }))]))
        }
        var outputs = (groupOutputs[group.name] ?? []).map { output in
            ManifestValue.map([("name", .string(output.name)), ("valueFrom", .map([("parameter", .string(output.parameter))]))])
        }
        if resultsRead.contains(group.name), let fanOut = group.fanOut {
            let parameter = ArgoPath("tasks", argoName(fanOut.template.name), "outputs", "parameters", "flowrun-result").tag
            outputs.append(.map([("name", .string("results")), ("valueFrom", .map([("parameter", .string(parameter))]))]))
        }
        if !outputs.isEmpty { template.set("outputs", .map([("parameters", .list(outputs))])) }
        if let concurrency = group.concurrency { template.set("parallelism", .int(group.sequential ? 1 : concurrency)) }
        else if group.sequential { template.set("parallelism", .int(1)) }
        template.set("dag", dag(tasks))
        return template.value
    }

    func dag(_ tasks: [ManifestValue]) -> ManifestValue {
        .map([("failFast", .bool(workflow.failFast)), ("tasks", .list(tasks))])
    }

    /// A join's check: count the members that succeeded (or were allowed to
    /// fail), set `status`, `succeeded` and `timed-out`, print the join block,
    /// and succeed when whatever needs the join may run.
    mutating func joinTemplate(_ join: JoinDefinition, members: [(name: String, continueOnError: Bool)], report: [(label: String, argument: String)]) -> ManifestValue {
        var template = ManifestMap()
        template.set("name", templateNames.name(for: "join " + join.name, base: argoName(join.name)))
        let inputs = members.indices.map { Self.parameter("m\($0 + 1)") } + report.indices.map { Self.parameter("r\($0 + 1)") }
        template.set("inputs", .map([("parameters", .list(inputs))]))
        let fields = published[join.name] ?? []
        let outputs = ["status", "succeeded", "timed-out"].map { field in
            Self.fromPath(field, "\(ArgoScripts.directory)/outputs/\(field)", default: "", global: fields.contains(field) ? globalName(join.name, field) : nil)
        }
        template.set("outputs", .map([("parameters", .list(outputs))]))
        let need = join.need.value.required(of: members.count)
        var lines = [
            "# flowrun join check (docs/CLUSTER.md)",
            "ok=0",
            "count() { case \"$1\" in Succeeded) ok=$((ok + 1)) ;; Failed|Error) if [ \"$2\" = yes ]; then ok=$((ok + 1)); fi ;; esac; }",
        ]
        for (offset, member) in members.enumerated() {
            lines.append("count \"$FLOWRUN_MEMBER_\(offset + 1)\" \(member.continueOnError ? "yes" : "no")  # \(member.name)")
        }
        lines.append("timed_out=false; code=0")
        if join.timeout != nil {
            let late = join.onTimeout == .continue ? "status=succeeded" : "status=timed_out; code=1"
            lines.append("if [ \"$ok\" -ge \(need) ]; then status=succeeded; else timed_out=true; \(late); fi")
        } else {
            lines.append("if [ \"$ok\" -ge \(need) ]; then status=succeeded; else status=failed; code=1; fi")
        }
        lines.append("mkdir -p \(ArgoScripts.directory)/outputs && cd \(ArgoScripts.directory)/outputs || exit 1")
        lines.append("printf '%s' \"$status\" > status; printf '%s' \"$ok\" > succeeded; printf '%s' \"$timed_out\" > timed-out")
        lines.append("printf '%s  %s  %s/%s\\n' \(ArgoScripts.shellQuoted(join.name)) \"$status\" \"$ok\" \(members.count)")
        for (offset, item) in report.enumerated() {
            lines.append("printf '    %s  %s\\n' \(ArgoScripts.shellQuoted(item.label)) \"$FLOWRUN_REPORT_\(offset + 1)\"")
        }
        lines.append("exit \"$code\"")
        let environment = members.indices.map { Self.env("FLOWRUN_MEMBER_\($0 + 1)", "{{inputs.parameters.m\($0 + 1)}}") }
            + report.indices.map { Self.env("FLOWRUN_REPORT_\($0 + 1)", "{{inputs.parameters.r\($0 + 1)}}") }
        template.set("script", script(environment: environment, source: lines.joined(separator: "\n") + "\n"))
        return template.value
    }

    /// The item list of a dynamic fan-out, as Argo's `withParam` needs it.
    func itemsTemplate(name: String, fields: [[String]]) -> ManifestValue {
        var template = ManifestMap()
        template.set("name", name)
        template.set("inputs", .map([("parameters", .list([Self.parameter("items")]))]))
        var environment = [Self.env("FLOWRUN_ITEMS", "{{inputs.parameters.items}}")]
        if !fields.isEmpty { environment.append(Self.env("FLOWRUN_ITEM_FIELDS", fields.map { $0.joined(separator: ".") }.joined(separator: "\n"))) }
        template.set("script", script(
            environment: environment,
            source: "# flowrun fan-out items: a JSON array, else one item per non-empty line\nawk \(ArgoScripts.shellQuoted(ArgoScripts.itemList))\n"))
        return template.value
    }
}
