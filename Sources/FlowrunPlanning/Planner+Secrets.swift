#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues

/// The values `secrets:` names, known when the run is planned.
extension Planner {
    /// Each secret's value: a variable's (after `--var`), the workflow's
    /// `env:` entry rendered (it may read only vars and flowrun's
    /// environment, so it is known now), and otherwise flowrun's own
    /// environment. A name that is unset everywhere has nothing to hide.
    /// Throws for a value shorter than `SecretMasker.minimumLength`.
    static func secretValues(of workflow: Workflow, environment: (String) -> String? = Self.callerEnvironment) throws(PlanningError) -> [String] {
        var values: [String] = []
        for name in workflow.secrets {
            var found: [String] = []
            if let variable = workflow.vars.last(where: { $0.name == name.value }) { found.append(variable.value) }
            if let entry = workflow.env.last(where: { $0.name == name.value }) {
                found.append(render(entry.value, vars: workflow.vars, environment: environment))
            } else if let value = environment(name.value) {
                found.append(value)
            }
            for value in found where !value.isEmpty && value.utf8.count < SecretMasker.minimumLength {
                throw PlanningError(message: "\(name.location): secret '\(name.value)' is \(value.utf8.count) byte\(value.utf8.count == 1 ? "" : "s") long; "
                    + "flowrun masks secrets of \(SecretMasker.minimumLength) bytes or more (a shorter one would turn every word holding it into ***, and protects nothing)")
            }
            values += found
        }
        return values
    }

    static func callerEnvironment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// A workflow `env:` value: its expressions read only vars and env.
    private static func render(_ template: Template, vars: [Variable], environment: (String) -> String?) -> String {
        var values: [OperandPath: ExpressionValue] = [:]
        for operand in template.operands {
            switch operand.path {
            case .variable(let name): values[operand.path] = .string(vars.last { $0.name == name }?.value ?? "")
            case .environment(let name): values[operand.path] = .string(environment(name) ?? "")
            default: break
            }
        }
        return (try? TemplateRenderer.render(template, mode: .text, in: ExpressionValues(values))) ?? template.source
    }
}
