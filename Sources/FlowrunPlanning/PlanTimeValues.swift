import FlowrunModel
import FlowrunValues

/// The `${{ }}` expressions of a task that planning can already evaluate:
/// those that read only literals, `vars.NAME` and `host.…` (a function of
/// them included). `--dry-run` shows each with its value; the rest wait for
/// the run (a task's output, `env.NAME`, an item).
enum PlanTimeValues {
    struct Entry: Equatable {
        /// The expression as written back out, e.g. `format('v{0}', vars.version)`.
        var expression: String
        var value: String
    }

    /// Each computed expression once, in the order the task uses them: its
    /// `run`/`http`, `env`, `cwd`, `name`, then `if:`. A bare `vars.NAME` is
    /// left out: the plan's `vars:` line already shows it.
    static func entries(of task: TaskDefinition, vars: [Variable]) -> [Entry] {
        var expressions: [Expression] = []
        for template in task.templates {
            for segment in template.segments {
                if case .expression(let expression, _) = segment { expressions.append(expression) }
            }
        }
        if let condition = task.condition { expressions.append(condition.value) }
        var entries: [Entry] = []
        var context: ExpressionValues?
        for expression in expressions where isComputed(expression) && isKnown(expression, vars: vars) {
            if context == nil { context = Self.context(vars) }
            let text = expression.description
            guard !entries.contains(where: { $0.expression == text }) else { continue }
            entries.append(Entry(expression: text, value: ExpressionEvaluator.evaluate(expression, in: context!).text))
        }
        return entries
    }

    /// How many members `foreach: ${{ … }}` gives when planning can evaluate
    /// it to an array (`split(vars.list, ',')`, `fromJSON('[…]')`); nil when
    /// it reads the run or gives text, which the run splits into lines.
    static func memberCount(of source: FanOutSource, split: FanOutSplit?, vars: [Variable]) -> Int? {
        guard split == nil, case .expression(let template) = source, template.segments.count == 1,
              case .expression(let expression, _) = template.segments[0], isKnown(expression, vars: vars) else { return nil }
        return ExpressionEvaluator.evaluate(expression, in: context(vars)).arrayItems?.count
    }

    private static func isComputed(_ expression: Expression) -> Bool {
        if case .operand(let operand) = expression, case .variable = operand.path { return false }
        if case .string = expression { return false }
        return true
    }

    /// Reads no run-time value: a computed var (`{sh: …}`) is known only once its task ran.
    private static func isKnown(_ expression: Expression, vars: [Variable]) -> Bool {
        expression.operands.allSatisfy { operand in
            if case .variable(let name) = operand.path { return !vars.contains { $0.name == name && $0.command != nil } }
            return !operand.path.needsRunTimeValue
        }
    }

    private static func context(_ vars: [Variable]) -> ExpressionValues {
        var values: [OperandPath: ExpressionValue] = [:]
        // The last definition wins, as in the engine.
        for variable in vars { values[.variable(variable.name)] = .string(variable.value) }
        return ExpressionValues(values)
    }
}
