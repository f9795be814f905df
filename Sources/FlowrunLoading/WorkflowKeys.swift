/// Every mapping key the validator accepts, by where it appears: the one
/// list that `schema/flowrun.schema.json` is checked against
/// (`WorkflowSchemaTests`), so that editors and `flowrun validate` agree.
///
/// The contexts are named after the schema's definitions: `workflow` is the
/// top level, `fanOutTask` a group's `task:` template, `template` an entry
/// of `templates:`, `http` a task's
/// `http:` mapping, `readyProbe` a service's `ready:`.
package enum WorkflowKeys {
    package static let byContext: [String: [String]] = [
        "workflow": WorkflowDecoder.topLevelKeys,
        // `uses:`/`with:` are read before the task's own keys (a template call).
        "task": WorkflowDecoder.taskKeys + ["uses", "with"],
        "fanOutTask": WorkflowDecoder.taskKeys + ["name", "uses", "with"],
        "template": WorkflowDecoder.taskKeys + ["params"],
        "group": WorkflowDecoder.groupKeys,
        "join": WorkflowDecoder.joinKeys,
        "http": WorkflowDecoder.httpKeys,
        "readyProbe": WorkflowDecoder.probeKeys,
    ]
}
