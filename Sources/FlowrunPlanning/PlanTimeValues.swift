#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues

/// What planning can already evaluate, for `--dry-run`: `${{ }}` that reads
/// only literals, `vars.NAME` (not a computed one: `{sh: …}` is known only
/// once its task ran), `host.…`, the words after `--`, and — where the dry
/// run fills in a whole template — flowrun's own `env.NAME`. The rest waits
/// for the run (a task's output, an item).
enum PlanTimeValues {
    struct Entry: Equatable {
        /// The expression as written back out, e.g. `format('v{0}', vars.version)`.
        var expression: String
        var value: String
    }

    /// A template's filled-in text (`env:` and `cwd:` lines, where
    /// `${{ env.PATH }}` shows as the run will see it), or nil when the
    /// template is literal or reads a value only a run has.
    static func filledIn(_ template: Template, vars: [Variable]) -> String? {
        guard !template.isLiteral else { return nil }
        let operands = template.operands
        guard operands.allSatisfy({ isKnown($0, vars: vars, readsEnvironment: true) }) else { return nil }
        var values = variables(vars)
        for operand in operands {
            if case .environment(let name) = operand.path {
                values[operand.path] = .string(getenv(name).map { String(cString: $0) } ?? "")
            }
        }
        return try? TemplateRenderer.render(template, mode: .text, in: ExpressionValues(values))
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
            if context == nil { context = ExpressionValues(variables(vars)) }
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
        return ExpressionEvaluator.evaluate(expression, in: ExpressionValues(variables(vars))).arrayItems?.count
    }

    private static func isComputed(_ expression: Expression) -> Bool {
        if case .operand(let operand) = expression, case .variable = operand.path { return false }
        if case .string = expression { return false }
        return true
    }

    private static func isKnown(_ expression: Expression, vars: [Variable]) -> Bool {
        expression.operands.allSatisfy { isKnown($0, vars: vars, readsEnvironment: false) }
    }

    /// The one rule of what a plan knows (see the type's comment).
    private static func isKnown(_ operand: Operand, vars: [Variable], readsEnvironment: Bool) -> Bool {
        switch operand.path {
        case .variable(let name): return !vars.contains { $0.name == name && $0.command != nil }
        case .environment: return readsEnvironment
        default: return !operand.path.needsRunTimeValue
        }
    }

    /// `vars.NAME` values; the last definition wins, as in the engine.
    private static func variables(_ vars: [Variable]) -> [OperandPath: ExpressionValue] {
        var values: [OperandPath: ExpressionValue] = [:]
        for variable in vars { values[.variable(variable.name)] = .string(variable.value) }
        return values
    }
}
