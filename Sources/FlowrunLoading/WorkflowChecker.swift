import FlowrunModel

/// The checks that need the whole workflow: one namespace, references,
/// cycles, joins that can be met, semaphores that can be held, expressions
/// that read only settled values, and timeouts that can matter.
struct WorkflowChecker {
    let workflow: Workflow
    let names: NameTable
    var diagnostics: [Diagnostic] = []
    var declared: [String: (kind: String, location: SourceLocation)] = [:]
    private let mainGraph: DependencyGraph
    private let finallyGraph: DependencyGraph
    private let mainReachability: DependencyGraph.Reachability
    private let finallyReachability: DependencyGraph.Reachability

    /// False when decoding already found errors, so "no tasks" would only repeat them.
    private let reportsMissingTasks: Bool

    init(workflow: Workflow, names: NameTable, reportsMissingTasks: Bool) {
        self.workflow = workflow
        self.reportsMissingTasks = reportsMissingTasks
        self.names = names
        mainGraph = DependencyGraph(mainPhaseOf: workflow)
        finallyGraph = DependencyGraph(finallyPhaseOf: workflow)
        mainReachability = DependencyGraph.Reachability(mainGraph)
        finallyReachability = DependencyGraph.Reachability(finallyGraph)
    }

    mutating func check() -> [Diagnostic] {
        checkNamespace()
        checkSomethingRuns()
        checkNeeds()
        checkJoins()
        checkSemaphores()
        checkExpressions()
        checkCycles(in: mainGraph)
        checkCycles(in: finallyGraph)
        checkTimeouts()
        checkSecrets()
        checkResources()
        var fanOutChecks = FanOutChecks(workflow: workflow)
        diagnostics += fanOutChecks.check()
        checkTargets(graph: mainGraph, reachability: mainReachability)
        return diagnostics
    }

    private mutating func error(_ message: String, at location: SourceLocation) {
        diagnostics.append(.error(message, at: location))
    }

    // MARK: - Names

    private mutating func checkNamespace() {
        func declare(_ name: String, _ kind: String, _ location: SourceLocation) {
            if let first = declared[name] {
                error("the name '\(name)' is already used by the \(first.kind) at \(first.location.line):\(first.location.column); tasks, groups and joins share one namespace", at: location)
                return
            }
            declared[name] = (kind, location)
        }
        declared.reserveCapacity(workflow.tasks.count + workflow.finally.count)
        // Tasks by index, fields read in place: a definition copied out retains every field.
        let tasks = workflow.tasks
        for index in tasks.indices { declare(tasks[index].name, "task", tasks[index].location) }
        for group in workflow.groups {
            declare(group.name, "group", group.location)
            for member in group.members { declare(member.name, "task", member.location) }
        }
        for join in workflow.joins { declare(join.name, "join", join.location) }
        for task in workflow.finally { declare(task.name, "finally task", task.location) }
    }

    private mutating func checkSomethingRuns() {
        let hasTask = !workflow.tasks.isEmpty || !workflow.finally.isEmpty
            || workflow.groups.contains { !$0.members.isEmpty || $0.fanOut != nil }
        if !hasTask, reportsMissingTasks, !diagnostics.hasErrors {
            error("the workflow has no tasks: add at least one under 'tasks:', a group or 'finally:'", at: SourceLocation(file: workflow.file, line: 1, column: 1))
        }
    }

    /// "did you mean" costs a pass over every name: after this many, a file
    /// full of unknown names is reported without hints, in linear time.
    private static let hintBudget = 20
    /// A box, so that asking for a hint needs no exclusive access to the checker.
    private final class HintCounter { var given = 0 }
    private let hints = HintCounter()

    /// " (did you mean 'x'?)" while the budget lasts.
    private func hint(for word: String, in candidates: @autoclosure () -> [String]) -> String {
        guard hints.given < Self.hintBudget else { return "" }
        hints.given += 1
        return Suggestion.hint(for: word, in: candidates())
    }

    /// "unknown name 'x' (did you mean 'y'?)", or nil when `name` is declared.
    private func unknownName(_ name: String, in what: String) -> String? {
        guard declared[name] == nil else { return nil }
        return "unknown name '\(name)' in \(what)\(hint(for: name, in: Array(declared.keys)))"
    }

    private mutating func checkNeeds() {
        let finallyNames = Set(workflow.finally.map(\.name))
        func check(_ needs: [Reference], of owner: String, group: String?, isFinally: Bool) {
            var seen = Set<String>()
            for need in needs {
                if let message = unknownName(need.value, in: "needs") { error(message, at: need.location); continue }
                if !seen.insert(need.value).inserted { error("'\(need.value)' is listed twice in needs", at: need.location) }
                if need.value == owner {
                    error("'\(owner)' cannot need itself", at: need.location)
                } else if need.value == group {
                    error("'\(owner)' is a member of group '\(need.value)' and cannot need it: the group finishes only after its members", at: need.location)
                } else if isFinally, !finallyNames.contains(need.value) {
                    error("a finally task may only need other finally tasks; '\(need.value)' has settled before finally starts anyway", at: need.location)
                } else if !isFinally, finallyNames.contains(need.value) {
                    error("'\(need.value)' is a finally task, which runs after everything else; nothing outside finally can need it", at: need.location)
                }
            }
        }
        let tasks = workflow.tasks
        for index in tasks.indices { check(tasks[index].needs, of: tasks[index].name, group: nil, isFinally: false) }
        for group in workflow.groups {
            check(group.needs, of: group.name, group: nil, isFinally: false)
            for member in group.members { check(member.needs, of: member.name, group: group.name, isFinally: false) }
            if let template = group.fanOut?.template { check(template.needs, of: template.name, group: group.name, isFinally: false) }
        }
        for task in workflow.finally { check(task.needs, of: task.name, group: nil, isFinally: true) }
    }

    // MARK: - Joins

    private mutating func checkJoins() {
        let finallyNames = Set(workflow.finally.map(\.name))
        for join in workflow.joins {
            var members: [String] = []
            for member in join.wait {
                if let message = unknownName(member.value, in: "wait") { error(message, at: member.location); continue }
                if member.value == join.name { error("join '\(join.name)' cannot wait for itself", at: member.location); continue }
                if finallyNames.contains(member.value) {
                    error("'\(member.value)' is a finally task; a join cannot wait for it", at: member.location)
                    continue
                }
                if members.contains(member.value) { error("'\(member.value)' is listed twice in wait", at: member.location); continue }
                members.append(member.value)
            }
            if case .count(let count) = join.need.value, count > join.wait.count {
                error("join '\(join.name)' needs \(count) member\(count == 1 ? "" : "s") to succeed but waits for only \(join.wait.count)", at: join.need.location)
            }
            for item in join.report ?? [] { checkReportItem(item, members: members) }
        }
    }

    private mutating func checkReportItem(_ item: ReportItem, members: [String]) {
        // Member names may hold dots: match the longest member that prefixes the entry.
        let text = item.text
        guard let member = members.filter({ text.hasPrefix($0 + ".") }).max(by: { $0.count < $1.count }) else {
            error("'\(text)' does not start with a member of this join (\(members.joined(separator: ", ")))", at: item.location)
            return
        }
        let field = String(text.dropFirst(member.count + 1))
        let valid: Bool
        let offered: String
        switch declared[member]?.kind {
        case "group":
            valid = GroupField(rawValue: field) != nil
            offered = "status or results"
        case "join":
            valid = JoinField(rawValue: field) != nil
            offered = "status, timed_out or succeeded"
        default:
            valid = ["stdout", "status", "exit_code", "duration"].contains(field)
                || (field.hasPrefix("outputs.") && field.count > 8 && !field.dropFirst(8).contains("."))
            offered = "stdout, status, exit_code, duration or outputs.KEY"
        }
        if !valid { error("'\(text)': a \(declared[member]?.kind ?? "task") offers \(offered)", at: item.location) }
    }

    // MARK: - Semaphores

    private mutating func checkSemaphores() {
        checkSemaphoreFamilies()
        let table = SemaphoreTable(workflow.semaphores)
        // In the order of `mainTasks`, templates, `finally`, without copying 100,000 definitions.
        // By index, skipping tasks without semaphores before copying a definition.
        let tasks = workflow.tasks
        for index in tasks.indices where !tasks[index].semaphores.isEmpty {
            checkSemaphores(of: tasks[index], table: table)
        }
        for group in workflow.groups {
            for task in group.members where !task.semaphores.isEmpty { checkSemaphores(of: task, table: table) }
        }
        for group in workflow.groups {
            if let template = group.fanOut?.template { checkSemaphores(of: template, table: table) }
        }
        for task in workflow.finally { checkSemaphores(of: task, table: table) }
    }

    /// Two families that could both match one name would make its pool
    /// depend on the order written: refused (SPEC §15).
    private mutating func checkSemaphoreFamilies() {
        let families = workflow.semaphores.filter { SemaphoreTable.isFamily($0.name) }
        for position in families.indices {
            let family = families[position]
            guard let earlier = families[..<position].first(where: { SemaphoreTable.overlaps($0.name, family.name) }) else { continue }
            error("semaphore family '\(family.name)' overlaps '\(earlier.name)' (line \(earlier.location.line)): some names match both, "
                + "so their pool would be ambiguous; narrow one so that no name matches both (a name declared without '*' wins over any family)",
                at: family.location)
        }
    }

    private mutating func checkSemaphores(of task: TaskDefinition, table: SemaphoreTable) {
        var seen = Set<String>()
        for use in task.semaphores {
            if use.computedName != nil {
                // Known only at run time: it must be able to match something, and fit in what it can match.
                let pattern = use.namePattern
                let candidates = table.candidates(forPattern: pattern)
                if candidates.isEmpty {
                    let hint = hint(for: pattern, in: table.declaredNames)
                    error("semaphore '\(use.name)' can match no declared semaphore or family\(hint); declare a family like '\(pattern)' under the top-level 'semaphores:'", at: use.location)
                } else if let largest = candidates.map(\.capacity).max(), use.weight > largest {
                    error("'\(task.name)' takes \(use.weight) of semaphore '\(use.name)', whose pools hold at most \(largest): it could never run", at: use.location)
                }
                continue
            }
            guard let pool = table.pool(named: use.name) else {
                let hint = hint(for: use.name, in: table.declaredNames)
                error("unknown semaphore '\(use.name)'\(hint); declare it under the top-level 'semaphores:'", at: use.location)
                continue
            }
            if !seen.insert(use.name).inserted { error("semaphore '\(use.name)' is listed twice", at: use.location) }
            if use.weight > pool.capacity {
                error("'\(task.name)' takes \(use.weight) of semaphore '\(use.name)', which holds only \(pool.capacity): it could never run", at: use.location)
            }
        }
    }

    // MARK: - Cycles

    private mutating func checkCycles(in graph: DependencyGraph) {
        for cycle in graph.cycles() {
            // Start the path at the node written first, so the message is stable.
            guard let first = cycle.indices.min(by: { graph.nodes[cycle[$0]].location < graph.nodes[cycle[$1]].location }) else { continue }
            let rotated = Array(cycle[first...] + cycle[..<first])
            let path = (rotated + [rotated[0]]).map { graph.nodes[$0].name }.joined(separator: " -> ")
            error("dependency cycle: \(path)", at: graph.nodes[rotated[0]].location)
        }
    }

    // MARK: - Expressions

    private mutating func checkExpressions() {
        for entry in workflow.env {
            for operand in entry.value.operands {
                switch operand.path {
                case .variable, .environment: break
                default: error("the workflow's env may use only vars and env values, not '\(operand.text)'", at: operand.location)
                }
            }
            checkVariables(in: entry.value.operands)
        }
        let tasks = workflow.tasks
        for index in tasks.indices { checkOperands(of: tasks[index], allowsItem: false) }
        for group in workflow.groups {
            for member in group.members { checkOperands(of: member, allowsItem: false) }
            if let condition = group.condition {
                // if: is read once the group's own needs have settled, as a task's.
                let graph = mainGraph
                let reachability = mainReachability
                for operand in condition.value.operands {
                    checkOperand(operand, readBy: "group '\(group.name)'", allowsItem: false, inFinally: false) { name in
                        guard let target = graph.indexByName[name] else { return false }
                        return group.needs.contains { need in
                            guard let needIndex = graph.indexByName[need.value] else { return false }
                            return needIndex == target || reachability.reaches(from: needIndex, to: target)
                        }
                    }
                }
            }
            guard let fanOut = group.fanOut else { continue }
            checkOperands(of: fanOut.template, allowsItem: true)
            if case .expression(let template) = fanOut.source {
                // foreach is read once the group's own needs have settled.
                let graph = mainGraph
                let reachability = mainReachability
                for operand in template.operands {
                    checkOperand(operand, readBy: "group '\(group.name)'", allowsItem: false, inFinally: false) { name in
                        guard let target = graph.indexByName[name] else { return false }
                        return group.needs.contains { need in
                            guard let needIndex = graph.indexByName[need.value] else { return false }
                            return needIndex == target || reachability.reaches(from: needIndex, to: target)
                        }
                    }
                }
            }
        }
        for task in workflow.finally {
            let graph = finallyGraph
            let reachability = finallyReachability
            let reader = graph.indexByName[task.name]
            for operand in Self.operands(of: task) {
                checkOperand(operand, readBy: "'\(task.name)'", allowsItem: false, inFinally: true) { name in
                    // Finally tasks read anything of the main phase; other finally tasks only through needs.
                    guard let target = graph.indexByName[name] else { return true }
                    return reader.map { reachability.reaches(from: $0, to: target) } ?? false
                }
            }
        }
    }

    private mutating func checkOperands(of task: TaskDefinition, allowsItem: Bool) {
        let graph = mainGraph
        let reachability = mainReachability
        guard let reader = graph.indexByName[task.name] else { return }
        for operand in Self.operands(of: task) {
            checkOperand(operand, readBy: "'\(task.name)'", allowsItem: allowsItem, inFinally: false) { name in
                graph.indexByName[name].map { reachability.reaches(from: reader, to: $0) } ?? false
            }
        }
    }

    /// Every operand a task's templates and condition read.
    private static func operands(of task: TaskDefinition) -> [Operand] {
        var templates = task.env.map(\.value) + [task.cwd, task.nameTemplate].compactMap { $0 }
        templates += task.sources + task.generates + task.semaphores.compactMap(\.computedName)
        var scriptOperands: [Operand] = []
        switch task.action {
        // `${{ args }}` alone is what a script may hold; any other use is checked as an operand.
        case .run(let script): scriptOperands = script.operandsBesideWholeArguments
        case .sleep: break
        case .http(let request):
            templates += [request.url] + request.headers.map(\.value) + [request.body].compactMap { $0 }
        }
        return scriptOperands + templates.flatMap(\.operands) + (task.condition?.value.operands ?? [])
    }

    private mutating func checkVariables(in operands: [Operand]) {
        let declaredVariables = workflow.vars.map(\.name)
        for operand in operands {
            guard case .variable(let name) = operand.path, !declaredVariables.contains(name) else { continue }
            error("unknown variable '\(operand.text)'\(hint(for: name, in: declaredVariables)); declare it under 'vars:'", at: operand.location)
        }
    }

    /// Checks one operand; `isSettled(name)` says whether that task, group or
    /// join has settled whenever the reader runs.
    private mutating func checkOperand(
        _ operand: Operand, readBy reader: String, allowsItem: Bool, inFinally: Bool, isSettled: (String) -> Bool
    ) {
        let kind: NameTable.Kind
        let name: String
        switch operand.path {
        case .variable:
            checkVariables(in: [operand])
            return
        case .environment, .host:
            return
        case .arguments:
            error("'args' is the words after -- on the command line, as shell words: write ${{ args }} on its own in run:, not in \(reader.hasPrefix("group") ? "a group's if:" : "other keys or inside a longer expression")"
                + (reader.hasPrefix("group") ? "" : "; args[N] is one word, usable anywhere"), at: operand.location)
            return
        case .argument:
            // One word: a value like any other, filled in for the named targets' tasks.
            if reader.hasPrefix("group") {
                error("'\(operand.text)' is a word passed to the named targets' tasks after --: a group's if: cannot read it; put the if: on its tasks", at: operand.location)
            }
            return
        case .item, .itemField, .index:
            if !allowsItem {
                error("'\(operand.text)' exists only in a fan-out template (a group's 'task:' with 'foreach:')", at: operand.location)
            }
            return
        case .task(let task, _): (kind, name) = (.task, task)
        case .group(let group, _): (kind, name) = (.group, group)
        case .join(let join, _): (kind, name) = (.join, join)
        }
        guard let actual = names.kinds[name] else {
            error("unknown \(kind.rawValue) '\(name)' in '\(operand.text)'\(hint(for: name, in: names.names(of: kind)))", at: operand.location)
            return
        }
        guard actual == kind else {
            error("'\(name)' is a \(actual.rawValue), not a \(kind.rawValue); read it as \(actual.rawValue)s.\(name).…", at: operand.location)
            return
        }
        if names.finallyTasks.contains(name), !inFinally {
            error("'\(operand.text)' reads finally task '\(name)', which runs after everything else", at: operand.location)
        } else if !isSettled(name) {
            error("'\(operand.text)' reads '\(name)', which is not among the needs of \(reader): add it to needs (directly or through another need)", at: operand.location)
        }
    }

    // MARK: - Timeouts

    private mutating func checkTimeouts() {
        let run = workflow.timeout?.value
        func warn(_ timeout: Located<Duration>?, exceeds limit: Duration?, _ what: String) {
            guard let timeout, let limit, timeout.value > limit else { return }
            diagnostics.append(.warning("this timeout (\(timeout.value.text)) is longer than the \(what) (\(limit.text)), which fires first", at: timeout.location))
        }
        for task in workflow.tasks { warn(task.timeout, exceeds: run, "run's timeout") }
        for group in workflow.groups {
            warn(group.timeout, exceeds: run, "run's timeout")
            for member in group.members + (group.fanOut.map { [$0.template] } ?? []) {
                if let groupTimeout = group.timeout?.value {
                    warn(member.timeout, exceeds: groupTimeout, "timeout of group '\(group.name)'")
                } else {
                    warn(member.timeout, exceeds: run, "run's timeout")
                }
            }
        }
        for join in workflow.joins { warn(join.timeout, exceeds: run, "run's timeout") }
    }
}
