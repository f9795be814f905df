/// What a task made from a template was called with: shown by `--dry-run`.
package struct TemplateCall: Sendable {
    package var template: String
    /// Each parameter and the text of its value (a `with:` value or the default).
    package var arguments: [(name: String, value: String)]

    package init(template: String, arguments: [(name: String, value: String)]) {
        self.template = template
        self.arguments = arguments
    }
}
