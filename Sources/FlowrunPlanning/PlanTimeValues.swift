#if canImport(Glibc)
import Glibc
#endif
package import FlowrunModel
import FlowrunValues

/// What planning can already evaluate, for `--dry-run`: `${{ }}` that reads
/// only literals, `vars.NAME` (not a computed one: `{sh: …}` is known only
/// once its task ran), `host.…`, the words after `--`, and — where the dry
/// run fills in a whole template — flowrun's own `env.NAME`. The rest waits
/// for the run (a task's output, an item).
///
/// Made once per plan shown: the vars' values and which are computed are
/// read once, not for each of thousands of tasks.
package struct PlanTimeValues {
    struct Entry: Equatable {
        /// The expression as written back out, e.g. `format('v{0}', vars.version)`.
        var expression: String
        var value: String
    }

    /// The names of `{sh: …}` vars.
    private let computed: Set<String>
    /// `vars.NAME` values; the last definition wins, as in the engine.
    private let values: [OperandPath: ExpressionValue]
    /// Each expression's value by its text: thousands of tasks stamped from
    /// one pattern repeat the same few (`startsWith(vars.ref, …)`), and what
    /// a plan knows reads nothing that differs between them.
    private let shown = ShownValues()

    package init(vars: [Variable]) {
        computed = Set(vars.filter { $0.command != nil }.map(\.name))
        var values: [OperandPath: ExpressionValue] = [:]
        for variable in vars { values[.variable(variable.name)] = .string(variable.value) }
        self.values = values
    }

    /// A template's filled-in text (`env:` and `cwd:` lines, where
    /// `${{ env.PATH }}` shows as the run will see it), or nil when the
    /// template is literal or reads a value only a run has.
    package func filledIn(_ template: Template) -> String? {
        guard !template.isLiteral else { return nil }
        let operands = template.operands
        guard operands.allSatisfy({ isKnown($0, readsEnvironment: true) }) else { return nil }
        var values = values
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
    /// `conditionText`: the `if:`'s text when the caller wrote it out already.
    func entries(of task: TaskDefinition, conditionText: String? = nil) -> [Entry] {
        var expressions: [(Expression, text: String?)] = []
        for template in task.templates {
            for segment in template.segments {
                if case .expression(let expression, _) = segment { expressions.append((expression, nil)) }
            }
        }
        if let condition = task.condition { expressions.append((condition.value, conditionText)) }
        var entries: [Entry] = []
        for (expression, written) in expressions where Self.isComputed(expression) && isKnown(expression) {
            let text = written ?? expression.description
            guard !entries.contains(where: { $0.expression == text }) else { continue }
            let value: String
            if let known = shown.values[text] {
                value = known
            } else {
                value = ExpressionEvaluator.evaluate(expression, in: ExpressionValues(values)).text
                shown.values[text] = value
            }
            entries.append(Entry(expression: text, value: value))
        }
        return entries
    }

    /// The memo behind `entries`: one plan shown, on one thread.
    private final class ShownValues {
        var values: [String: String] = [:]
    }

    /// How many members `foreach: ${{ … }}` gives when planning can evaluate
    /// it to an array (`split(vars.list, ',')`, `fromJSON('[…]')`); nil when
    /// it reads the run or gives text, which the run splits into lines.
    func memberCount(of source: FanOutSource, split: FanOutSplit?) -> Int? {
        guard split == nil, case .expression(let template) = source, template.segments.count == 1,
              case .expression(let expression, _) = template.segments[0], isKnown(expression) else { return nil }
        return ExpressionEvaluator.evaluate(expression, in: ExpressionValues(values)).arrayItems?.count
    }

    private static func isComputed(_ expression: Expression) -> Bool {
        if case .operand(let operand) = expression, case .variable = operand.path { return false }
        if case .string = expression { return false }
        return true
    }

    /// Walks the tree rather than making an array of its operands: asked
    /// for each expression of each task shown.
    private func isKnown(_ expression: Expression) -> Bool {
        switch expression {
        case .string, .number, .boolean: return true
        case .operand(let operand): return isKnown(operand, readsEnvironment: false)
        case .not(let inner): return isKnown(inner)
        case .binary(_, let left, let right): return isKnown(left) && isKnown(right)
        case .call(_, let arguments): return arguments.allSatisfy { isKnown($0) }
        }
    }

    /// The one rule of what a plan knows (see the type's comment).
    private func isKnown(_ operand: Operand, readsEnvironment: Bool) -> Bool {
        switch operand.path {
        case .variable(let name): return !computed.contains(name)
        case .environment: return readsEnvironment
        default: return !operand.path.needsRunTimeValue
        }
    }
}
