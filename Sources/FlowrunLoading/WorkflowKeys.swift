/// Every mapping key the validator accepts, by where it appears: the one
/// list that `schema/flowrun.schema.json` is checked against
/// (`WorkflowSchemaTests`), so that editors and `flowrun validate` agree.
///
/// The contexts are named after the schema's definitions: `workflow` is the
/// top level, `fanOutTask` a group's `task:` template, `http` a task's
/// `http:` mapping.
package enum WorkflowKeys {
    package static let byContext: [String: [String]] = [
        "workflow": WorkflowDecoder.topLevelKeys,
        "task": WorkflowDecoder.taskKeys,
        "fanOutTask": WorkflowDecoder.taskKeys + ["name"],
        "group": WorkflowDecoder.groupKeys,
        "join": WorkflowDecoder.joinKeys,
        "http": WorkflowDecoder.httpKeys,
    ]
}
