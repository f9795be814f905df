import FlowrunYAML
import FlowrunModel

/// `templates: {NAME: {params: {...}, run: ..., ...}}` — a reusable task
/// with parameters. Calls (`uses: NAME`, `with: {...}`) are expanded into
/// ordinary tasks when the file is read, so nothing after validation knows
/// templates exist except through `TaskDefinition.templateCall`. The body
/// stays YAML: the model never sees it.
struct TaskTemplate: Sendable {
    var name: String
    var location: SourceLocation
    /// In declaration order.
    var parameters: [TemplateParameter]
    /// The template's task keys as written (`params` left out): a call
    /// merges its own keys over these and decodes the result as a task.
    var body: [YAMLNode.Pair]
    /// Each default, read once for every call that leaves it out.
    var defaults: [String: TemplateParameterScope.Value] = [:]

    func parameter(named name: String) -> TemplateParameter? {
        parameters.first { $0.name == name }
    }
}

/// One entry of `params:`: a name and its default, or none (`~`) when a call must give it.
struct TemplateParameter: Sendable {
    var name: String
    var location: SourceLocation
    /// The default as written; nil when the parameter is required.
    var defaultValue: YAMLNode?

    var isRequired: Bool { defaultValue == nil }
}
