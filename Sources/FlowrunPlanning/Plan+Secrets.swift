import FlowrunModel
import FlowrunValues

/// What the dry run and the plan JSON show of secrets: `***`.
extension Plan {
    /// The workflow as it is shown: each secret variable's and `env:`
    /// entry's value replaced by `***` (whatever its length, so even an
    /// unset one shows as secret), on top of which the whole text is masked.
    var workflowShown: Workflow {
        guard !workflow.secrets.isEmpty else { return workflow }
        let names = Set(workflow.secrets.map(\.value))
        var shown = workflow
        for index in shown.vars.indices where names.contains(shown.vars[index].name) {
            shown.vars[index].value = SecretMasker.replacement
        }
        for index in shown.env.indices where names.contains(shown.env[index].name) {
            let location = shown.env[index].value.location
            shown.env[index].value = Template(source: SecretMasker.replacement, segments: [.text(SecretMasker.replacement)], location: location)
        }
        return shown
    }

    /// `text` with every secret value masked.
    func shown(_ text: String) -> String {
        secretMasker?.mask(text) ?? text
    }

    /// JSON with every secret value masked inside its strings.
    func shownJSON(_ json: String) -> String {
        secretMasker?.maskJSON(json) ?? json
    }
}
