/// What a run may take over instead of running: the stashes of tasks a
/// resumed run restores from its old record, and the incremental state of
/// tasks with `sources` (`up_to_date`). Given to the engine before `run()`.
package struct TaskReuse: Sendable {
    /// By task name (a fan-out member's name, with its item checked too).
    package var restored: [String: RestoredTask] = [:]
    /// The run being resumed, linked from this one's record.
    package var resumedFrom: String?
    /// `.flowrun/state`; nil with `--force`, or when it cannot be used.
    package var store: IncrementalStore?

    package init() {}
}

/// A task that succeeded in the run being resumed, with what it stashed.
package struct RestoredTask: Sendable {
    /// For a fan-out member: the item it ran for (restored only for the same item).
    package var item: String?
    package var stdout: String
    package var exitCode: Int?
    package var outputs: [(key: String, value: String)]
    package var duration: Double?
    /// A stdout over 1 MiB: the old record's file holding it whole.
    package var wholeStdout: (file: String, byteCount: Int)?

    package init(
        item: String?, stdout: String, exitCode: Int?, outputs: [(key: String, value: String)], duration: Double?,
        wholeStdout: (file: String, byteCount: Int)? = nil
    ) {
        self.wholeStdout = wholeStdout
        self.item = item
        self.stdout = stdout
        self.exitCode = exitCode
        self.outputs = outputs
        self.duration = duration
    }
}
