#if canImport(Glibc)
import Glibc
#endif
package import FlowrunModel
import FlowrunValues

/// A template's value when a plan already knows it: it reads only `vars.*`
/// and flowrun's own `env.*` (the workflow's `env:` can read nothing
/// else), so `--dry-run` shows `${{ env.PATH }}` filled in, as the run will.
package enum PlanTimeValue {
    /// The filled-in text, or nil when the template is literal or reads a
    /// value only a run has (a task's output, `item`, …).
    package static func of(_ template: Template, vars: [Variable]) -> String? {
        guard !template.isLiteral else { return nil }
        var values: [OperandPath: ExpressionValue] = [:]
        for operand in template.operands {
            switch operand.path {
            case .variable(let name):
                values[operand.path] = .string(vars.last { $0.name == name }?.value ?? "")
            case .environment(let name):
                values[operand.path] = .string(getenv(name).map { String(cString: $0) } ?? "")
            default:
                return nil
            }
        }
        return try? TemplateRenderer.render(template, mode: .text, in: ExpressionValues(values))
    }
}
