import FlowrunModel

/// Makes an included workflow's names `NS:NAME` (SPEC §15): its tasks,
/// groups, joins, `finally` tasks, aliases and vars, and every reference to
/// them inside it (`needs`, `wait`, `report`, `${{ tasks.T.… }}`,
/// `${{ vars.X }}`), so that its own names keep meaning its own things.
/// Its tasks run in its folder: no `cwd:` is that folder, a relative one is
/// taken from there. Its `env:` is each of its tasks' own (under theirs).
struct WorkflowNamespacing {
    /// `docs:`
    let prefix: String
    /// The included file's folder as the run sees it (`docs/`), "" for the same folder.
    let folder: String

    func merge(_ included: Workflow, into workflow: inout Workflow) {
        // A computed (`sh:`) or required var keeps what it is, under its new name.
        workflow.vars += included.vars.map { variable in
            var renamed = variable
            renamed.name = prefix + variable.name
            return renamed
        }
        let env = included.env.map { EnvironmentEntry(name: $0.name, value: template($0.value), location: $0.location) }
        workflow.tasks += included.tasks.map { task($0, env: env) }
        workflow.groups += included.groups.map { group($0, env: env) }
        workflow.joins += included.joins.map(join)
        workflow.finally += included.finally.map { task($0, env: env) }
    }

    private func reference(_ reference: Reference) -> Reference { Reference(prefix + reference.value, at: reference.location) }

    private func task(_ original: TaskDefinition, env: [EnvironmentEntry]) -> TaskDefinition {
        var task = original
        task.name = prefix + task.name
        task.needs = task.needs.map(reference)
        task.aliases = task.aliases.map(reference)
        switch task.action {
        case .run(let script): task.action = .run(template(script))
        case .sleep: break
        case .http(var request):
            request.url = template(request.url)
            request.headers = request.headers.map { ($0.name, template($0.value)) }
            request.body = request.body.map(template)
            task.action = .http(request)
        }
        let own = Set(task.env.map(\.name))
        task.env = env.filter { !own.contains($0.name) } + task.env.map { EnvironmentEntry(name: $0.name, value: template($0.value), location: $0.location) }
        task.cwd = cwd(task.cwd.map(template), at: task.location)
        if let condition = task.condition { task.condition = Located(expression(condition.value), at: condition.location) }
        if let name = task.nameTemplate { task.nameTemplate = template(name) }
        if task.semaphores.contains(where: { $0.computedName != nil }) {
            task.semaphores = task.semaphores.map { use in
                var use = use
                use.computedName = use.computedName.map(template)
                return use
            }
        }
        if !task.sources.isEmpty { task.sources = task.sources.map(template) }
        if !task.generates.isEmpty { task.generates = task.generates.map(template) }
        return task
    }

    private func group(_ original: GroupDefinition, env: [EnvironmentEntry]) -> GroupDefinition {
        var group = original
        group.name = prefix + group.name
        group.needs = group.needs.map(reference)
        group.aliases = group.aliases.map(reference)
        if let condition = group.condition { group.condition = Located(expression(condition.value), at: condition.location) }
        group.members = group.members.map { task($0, env: env) }
        if var fanOut = group.fanOut {
            fanOut.template = task(fanOut.template, env: env)
            if case .expression(let items) = fanOut.source { fanOut.source = .expression(template(items)) }
            group.fanOut = fanOut
        }
        return group
    }

    private func join(_ original: JoinDefinition) -> JoinDefinition {
        var join = original
        join.name = prefix + join.name
        join.wait = join.wait.map(reference)
        join.report = join.report?.map { ReportItem(member: prefix + $0.member, field: $0.field, location: $0.location) }
        return join
    }

    /// The task's folder: the included file's, or a relative `cwd:` taken from there.
    private func cwd(_ cwd: Template?, at location: SourceLocation) -> Template? {
        guard !folder.isEmpty else { return cwd }
        guard let cwd else { return Template(source: folder, segments: [.text(folder)], location: location) }
        if cwd.source.hasPrefix("/") { return cwd }
        return Template(source: folder + cwd.source, segments: [.text(folder)] + cwd.segments, location: cwd.location)
    }

    private func template(_ original: Template) -> Template {
        guard !original.isLiteral else { return original }
        var template = original
        template.segments = original.segments.map { segment in
            guard case .expression(let inner, let location) = segment else { return segment }
            return .expression(expression(inner), location)
        }
        return template
    }

    private func expression(_ expression: Expression) -> Expression {
        switch expression {
        case .string, .number, .boolean: return expression
        case .operand(var operand):
            switch operand.path {
            case .variable(let name): operand.path = .variable(prefix + name)
            case .task(let name, let field): operand.path = .task(prefix + name, field)
            case .group(let name, let field): operand.path = .group(prefix + name, field)
            case .join(let name, let field): operand.path = .join(prefix + name, field)
            case .environment, .item, .itemField, .index, .arguments, .argument, .host: break
            }
            return .operand(operand)
        case .not(let inner): return .not(self.expression(inner))
        case .binary(let op, let left, let right): return .binary(op, self.expression(left), self.expression(right))
        case .call(let function, let arguments): return .call(function, arguments.map(self.expression))
        }
    }
}
