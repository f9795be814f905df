import FlowrunPlanning

/// A task found up to date, as the engine settles it: its last successful
/// run's stash, and that record with newer stamps when it should be written
/// again. Only this is kept, not the record and check whole: 70 tasks of
/// 91 sources each held at once were 600 page faults more than one at a time.
package struct UpToDate: Sendable {
    var stdout: String
    var exitCode: Int?
    var outputs: [IncrementalRecord.KeyValue]
    /// Stamps settled since the record was written: kept, so that the next run reads nothing.
    var refreshed: IncrementalRecord?
    /// A fan-out member's identity as the check before the run made it
    /// (22 K instructions each): the engine's record of the member takes it.
    var memberIdentity: (item: String, identity: TaskIdentity)?

    init(record: IncrementalRecord, check: IncrementalCheck, generated: [IncrementalRecord.PathHash]) {
        stdout = record.stdout
        exitCode = record.exitCode
        outputs = record.outputs
        refreshed = record.withStamps(sources: check.sources, generates: generated)
    }
}
