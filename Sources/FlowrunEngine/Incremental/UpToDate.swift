/// A task found up to date: its last successful run's record, the check
/// that matched it, and its generated files as they are now.
package struct UpToDate: Sendable {
    var record: IncrementalRecord
    var check: IncrementalCheck
    var generated: [IncrementalRecord.PathHash]
}
