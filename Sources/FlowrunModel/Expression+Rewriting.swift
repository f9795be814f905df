/// Expressions with some operands replaced by other expressions: how the
/// planner fills in what a run's command line gives (`args[N]`).
extension Expression {
    /// The expression with each operand `transform` answers for replaced.
    package func replacingOperands(_ transform: (Operand) -> Expression?) -> Expression {
        switch self {
        case .string, .number, .boolean: return self
        case .operand(let operand): return transform(operand) ?? self
        case .not(let inner): return .not(inner.replacingOperands(transform))
        case .binary(let op, let left, let right): return .binary(op, left.replacingOperands(transform), right.replacingOperands(transform))
        case .call(let function, let arguments): return .call(function, arguments.map { $0.replacingOperands(transform) })
        }
    }
}

extension Template {
    /// The template with each operand `transform` answers for replaced; its
    /// source written back out, so the plan shows (and an identity hashes)
    /// what the run fills in.
    package func replacingOperands(_ transform: (Operand) -> Expression?) -> Template {
        guard !isLiteral else { return self }
        let segments = segments.map { segment -> Segment in
            guard case .expression(let expression, let location) = segment else { return segment }
            return .expression(expression.replacingOperands(transform), location)
        }
        let source = segments.map { segment -> String in
            switch segment {
            case .text(let text): return text
            case .expression(let expression, _): return "${{ \(expression) }}"
            }
        }.joined()
        return Template(source: source, segments: segments, location: location)
    }
}

extension TaskDefinition {
    /// Every template and the `if:` with `transform` applied (run, http, env,
    /// cwd, a fan-out name, computed semaphore names, sources, generates).
    package func replacingOperands(_ transform: (Operand) -> Expression?) -> TaskDefinition {
        var task = self
        switch task.action {
        case .run(let script): task.action = .run(script.replacingOperands(transform))
        case .sleep: break
        case .http(var request):
            request.url = request.url.replacingOperands(transform)
            request.headers = request.headers.map { ($0.name, $0.value.replacingOperands(transform)) }
            request.body = request.body?.replacingOperands(transform)
            task.action = .http(request)
        }
        task.env = task.env.map { EnvironmentEntry(name: $0.name, value: $0.value.replacingOperands(transform), location: $0.location) }
        if let cwd = task.cwd { task.cwd = cwd.replacingOperands(transform) }
        if let name = task.nameTemplate { task.nameTemplate = name.replacingOperands(transform) }
        if let condition = task.condition { task.condition = Located(condition.value.replacingOperands(transform), at: condition.location) }
        if task.hasComputedSemaphores {
            task.semaphores = task.semaphores.map { use in
                var use = use
                use.computedName = use.computedName?.replacingOperands(transform)
                return use
            }
        }
        if !task.sources.isEmpty { task.sources = task.sources.map { $0.replacingOperands(transform) } }
        if !task.generates.isEmpty { task.generates = task.generates.map { $0.replacingOperands(transform) } }
        return task
    }
}
