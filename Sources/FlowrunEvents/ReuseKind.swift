/// How a task came to be `succeeded` without running (the `reused` field of
/// `task_finished` and of the summary's task).
package enum ReuseKind: String, Sendable {
    /// Restored from the run `flowrun resume` continues.
    case restored
    /// Its sources, identity and generated files match its last successful run.
    case upToDate = "up_to_date"
}
