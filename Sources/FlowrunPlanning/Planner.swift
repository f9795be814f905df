#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
package import FlowrunModel
import FlowrunValues

/// Command-line choices that change a plan.
package struct PlanOptions: Sendable {
    package var variables: [(name: String, value: String)] = []
    package var maxParallel: Int?
    package var failFast = false
    package var only: [String] = []
    /// With no `only`, run the file's `default:` (a run does; `list`,
    /// `graph` and `export` show the whole workflow).
    package var runsDefaultTargets = false
    /// `--parallel`: targets named on the command line start together
    /// instead of one after another (SPEC §15).
    package var parallelTargets = false
    /// Turn a `foreach` over `vars` into its items (`sizeFanOutsKnownAtPlanning`).
    /// `export` keeps the expression: Argo takes `vars` as parameters a
    /// submit may change, so the items are read there.
    package var sizesFanOutsOverVars = true
    /// The words after `--` (SPEC §15); nil when the command line has no `--`.
    package var arguments: [String]?
    /// Fill `${{ args }}` in (`export` leaves it to the compiler).
    package var fillsArguments = true
    /// A run: variables declared `required: true` must be given (`list`, `graph`, `export` show them unset).
    package var requiresVariables = false

    package init() {}
}

/// A problem with the command line rather than the file (exit 2).
package struct PlanningError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}

/// The planning stage: Workflow → Plan.
package enum Planner {
    /// A `finally` task's budget when it sets no `timeout:` (SPEC §5).
    package static let finallyDefaultTimeout = Duration.seconds(300)

    /// `max_parallel: cpus`: the number of online CPUs.
    package static var cpuCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// `max_parallel` when the file does not set it: the same on every
    /// machine, so a recipe schedules and meets its deadlines alike on a
    /// laptop and a server (SPEC §10).
    package static let defaultMaxParallel = 16

    package static func plan(_ workflow: Workflow, options: PlanOptions = PlanOptions()) throws(PlanningError) -> Plan {
        var workflow = workflow
        try apply(options, to: &workflow)
        if options.requiresVariables { try checkRequiredVariables(&workflow, given: options.variables) }
        try addComputedVariableTasks(&workflow)
        if options.sizesFanOutsOverVars { sizeFanOutsKnownAtPlanning(&workflow) }
        let maxParallel = workflow.maxParallel ?? (workflow.maxParallelIsCPUCount ? cpuCount : defaultMaxParallel)
        let graph = DependencyGraph(mainPhaseOf: workflow)
        let selection = try TargetSelection(options.only, usingDefault: options.runsDefaultTargets, workflow: workflow, graph: graph)
        if options.fillsArguments { try fillArguments(&workflow, arguments: options.arguments, selection: selection, graph: graph) }
        let selected = selection.nodes
        var steps = mainSteps(workflow, graph: graph, maxParallel: maxParallel, selected: selected)
        for index in steps.indices where steps[index].kind == .fanOut {
            steps[index].fanOutItems = selection.fanOutItems[steps[index].name]
            if let items = steps[index].fanOutItems {
                steps[index].fanOutCount = items.count
                if let group = steps.firstIndex(where: { $0.kind == .group && $0.name == steps[index].group }) { steps[group].fanOutCount = items.count }
            }
        }
        chainSequentialMembers(&steps, workflow: workflow, graph: graph)
        if !options.parallelTargets {
            runInOrder(&steps, sequence: selection.orderedTargets, graph: graph, reason: "targets run in the order given")
        }
        // Only order can move a step to a later stage than its needs give it.
        if steps.contains(where: { $0.runsAfter != nil }) { restage(&steps, graph: graph) }
        let finallyGraph = DependencyGraph(finallyPhaseOf: workflow)
        let finallyStages = finallyGraph.stages()
        // Definitions by index, not copied out (a kilobyte each).
        let finallyTasks = Dictionary(workflow.finally.indices.map { (workflow.finally[$0].name, $0) }, uniquingKeysWith: { first, _ in first })
        let capacities = SemaphoreTable(workflow.semaphores)
        let finallySteps = order(finallyGraph, stages: finallyStages).map { index in
            let task = finallyTasks[finallyGraph.nodes[index].name]!
            var step = taskStep(workflow.finally[task], node: finallyGraph.nodes[index], capacities: capacities, workflow: workflow, maxParallel: maxParallel, group: nil)
            step.stage = finallyStages[index]
            step.timers.runTimeout = nil
            // finally has its own budget, 5 minutes unless the task says otherwise
            // (an http task's whole-request limit is the same 5 minutes).
            step.timers.timeout = workflow.finally[task].attemptTimeout ?? finallyDefaultTimeout
            return step
        }
        var users: [String: [String]] = [:]
        // By index and through the shared definition: a step or a definition
        // copied out retains every field it has.
        for phase in [steps, finallySteps] {
            for index in phase.indices {
                // A pool of a family, or a computed name, counts as a use of the family it can take.
                for semaphore in phase[index].limits?.semaphores ?? [] {
                    for name in semaphore.sharedBy { users[name, default: []].append(phase[index].name) }
                }
            }
        }
        let semaphores = workflow.semaphores.map { declaration in
            PlannedSemaphore(name: declaration.name, capacity: declaration.capacity, users: users[declaration.name] ?? [],
                             isFamily: SemaphoreTable.isFamily(declaration.name))
        }
        let secretMasker = SecretMasker(values: try secretValues(of: workflow))
        // This machine's capacity is read (a few /proc and cgroup files) only when a task declares resources.
        let declares = workflow.tasks.contains { $0.resources != nil } || workflow.finally.contains { $0.resources != nil }
            || workflow.groups.contains { group in group.fanOut?.template.resources != nil || group.members.contains { $0.resources != nil } }
        let capacity = ResolvedCapacity(
            cpus: workflow.capacity.cpus ?? (declares ? HostCapacity.cpus : 1),
            memoryBytes: workflow.capacity.memoryBytes ?? (declares ? HostCapacity.memoryBytes : 1 << 30),
            cpusAreAuto: workflow.capacity.cpus == nil, memoryIsAuto: workflow.capacity.memoryBytes == nil)
        return Plan(workflow: workflow, maxParallel: maxParallel, runTimeout: workflow.timeout?.value, steps: steps, finallySteps: finallySteps, semaphores: semaphores,
                    only: selection.targets, targetsAreDefault: selection.isDefault, secretMasker: secretMasker, capacity: capacity)
    }

    private static func apply(_ options: PlanOptions, to workflow: inout Workflow) throws(PlanningError) {
        for (name, value) in options.variables {
            guard let index = workflow.vars.firstIndex(where: { $0.name == name }) else {
                let hint = Suggestion.hint(for: name, in: workflow.vars.map(\.name))
                // The name is as typed: a line break in it must not start a line of the message.
                let shown = TerminalText.escaped(name)
                throw PlanningError(message: "--var \(shown)=…: the workflow declares no variable '\(shown)'\(hint)")
            }
            workflow.vars[index].value = value
            // --var overrides a computed value without running its command.
            workflow.vars[index].command = nil
        }
        if let maxParallel = options.maxParallel {
            guard maxParallel >= 1 else { throw PlanningError(message: "--max-parallel must be at least 1") }
            workflow.maxParallel = maxParallel
        }
        if options.failFast { workflow.failFast = true }
    }

    /// Node indices by stage, then by position in the file.
    private static func order(_ graph: DependencyGraph, stages: [Int]) -> [Int] {
        // The keys once, not a node copied out per comparison.
        let keys = graph.nodes.indices.map { (stage: stages[$0], location: graph.nodes[$0].location) }
        return graph.nodes.indices.sorted { (keys[$0].stage, keys[$0].location) < (keys[$1].stage, keys[$1].location) }
    }

    private static func mainSteps(_ workflow: Workflow, graph: DependencyGraph, maxParallel: Int, selected: Set<Int>?) -> [PlanStep] {
        let stages = graph.stages()
        let groups = Dictionary(workflow.groups.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        // Definitions by index, not copied out (a kilobyte each).
        let tasks = Dictionary(workflow.tasks.indices.map { (workflow.tasks[$0].name, $0) }, uniquingKeysWith: { first, _ in first })
        let members = Dictionary(workflow.groups.flatMap { group in group.members.map { ($0.name, $0) } }, uniquingKeysWith: { first, _ in first })
        let joins = Dictionary(workflow.joins.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let capacities = SemaphoreTable(workflow.semaphores)
        var joinsOf: [String: [String]] = [:]
        for join in workflow.joins {
            for member in join.wait { joinsOf[member.value, default: []].append(join.name) }
        }

        var steps: [PlanStep] = []
        steps.reserveCapacity(graph.nodes.count)
        for index in order(graph, stages: stages) where selected?.contains(index) ?? true {
            let node = graph.nodes[index]
            var step: PlanStep
            switch node.kind {
            case .task:
                let group = node.group.flatMap { groups[$0] }
                if let task = tasks[node.name] {
                    step = taskStep(workflow.tasks[task], node: node, capacities: capacities, workflow: workflow, maxParallel: maxParallel, group: group)
                } else {
                    step = taskStep(members[node.name]!, node: node, capacities: capacities, workflow: workflow, maxParallel: maxParallel, group: group)
                }
            case .fanOut:
                let group = groups[node.group!]!
                step = taskStep(group.fanOut!.template, node: node, capacities: capacities, workflow: workflow, maxParallel: maxParallel, group: group)
                step.fanOutCount = group.fanOut!.source.staticCount
                    ?? PlanTimeValues(vars: workflow.vars).memberCount(of: group.fanOut!.source, split: group.fanOut!.split)
                step.fanOutSource = group.fanOut!.source
                step.fanOutSplit = group.fanOut!.split
                step.fanOutAxes = group.fanOut!.matrixAxes
                if group.fanOut!.template.hasComputedSemaphores, step.limits != nil {
                    namePools(of: &step.limits!, template: group.fanOut!.template, source: group.fanOut!.source, table: capacities, vars: workflow.vars)
                }
            case .group:
                let group = groups[node.name]!
                step = PlanStep(
                    name: node.name, kind: .group, location: node.location, stage: 0, needs: group.needs.map(\.value),
                    group: nil, joins: [], sharedTask: nil, limits: nil,
                    timers: Timers(timeout: group.timeout?.value, groupTimeout: nil, runTimeout: workflow.timeout?.value),
                    fanOutCount: nil, fanOutSource: group.fanOut?.source,
                    members: group.members.map(\.name) + (group.fanOut.map { [$0.template.name] } ?? []),
                    concurrency: group.concurrency, join: nil)
                step.fanOutCount = group.fanOut.flatMap { $0.source.staticCount ?? PlanTimeValues(vars: workflow.vars).memberCount(of: $0.source, split: $0.split) }
                step.fanOutAxes = group.fanOut?.matrixAxes
                if group.when != .success { step.groupWhen = group.when }
                step.groupCondition = group.condition
            case .join:
                let join = joins[node.name]!
                step = PlanStep(
                    name: node.name, kind: .join, location: node.location, stage: 0, needs: join.wait.map(\.value),
                    group: nil, joins: [], sharedTask: nil, limits: nil,
                    timers: Timers(timeout: join.timeout?.value, groupTimeout: nil, runTimeout: workflow.timeout?.value),
                    fanOutCount: nil, fanOutSource: nil, members: join.wait.map(\.value), concurrency: nil, join: join)
            }
            step.stage = stages[index]
            step.joins = joinsOf[node.name] ?? []
            // A member `--only` selected without its group runs outside it:
            // no group starts, so neither its deadline nor its slots apply.
            if let group = node.group, let selected, let groupIndex = graph.indexByName[group], !selected.contains(groupIndex) {
                step.timers.groupTimeout = nil
                step.limits?.group = nil
            }
            steps.append(step)
        }
        return steps
    }

    private static func taskStep(
        _ task: TaskDefinition, node: DependencyGraph.Node, capacities: SemaphoreTable, workflow: Workflow, maxParallel: Int, group: GroupDefinition?
    ) -> PlanStep {
        let limits = TaskLimits(
            runSlots: maxParallel,
            group: group.flatMap { group in group.concurrency.map { (group.name, $0) } },
            semaphores: task.semaphores.map { semaphoreLimit($0, table: capacities) })
        return PlanStep(
            name: task.name, kind: node.kind, location: task.location, stage: 0,
            needs: task.needs.map(\.value).filter { $0 != group?.name } + (group?.needs.map(\.value) ?? []),
            group: group?.name, joins: [], sharedTask: Shared(task), limits: limits,
            timers: Timers(timeout: task.attemptTimeout, groupTimeout: group?.timeout?.value, runTimeout: workflow.timeout?.value),
            fanOutCount: nil, fanOutSource: nil, members: [], concurrency: nil, join: nil)
    }
}
