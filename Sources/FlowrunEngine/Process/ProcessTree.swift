/// The marker that ties a task attempt's processes together even after they
/// leave its process group: `FLOWRUN_TREE=<run id>.<serial>` in the
/// environment, inherited by every descendant that does not scrub it.
///
/// The variable's value is a ':'-separated list, so a flowrun started inside
/// a task keeps its parent's marker and adds its own: the outer run can still
/// find (and kill) the inner run's tasks.
struct ProcessTreeMarker: Hashable, Sendable, CustomStringConvertible {
    /// The environment variable's name.
    static let variable = "FLOWRUN_TREE"

    /// The run's id; it must not contain ':' or '.'-prefixed collisions with
    /// another run's id (flowrun's ids are unique per run).
    var runID: String
    /// Unique within the run, e.g. per task attempt.
    var serial: Int

    /// "RUN.SERIAL"
    var description: String { runID + "." + String(serial) }

    /// The "FLOWRUN_TREE=…" entry for the child's environment, keeping the
    /// marker flowrun itself inherited (its own `FLOWRUN_TREE`), if any.
    func environmentEntry(inherited: String? = nil) -> String {
        "\(Self.variable)=\(value(inherited: inherited))"
    }

    /// The variable's value: the inherited markers, then this one.
    func value(inherited: String? = nil) -> String {
        guard let inherited, !inherited.isEmpty else { return description }
        return inherited + ":" + description
    }
}

/// One task attempt's processes: its process group (led by the shell that
/// `ProcessLauncher` started, so pgid = that pid) plus every process whose
/// environment carries `marker`.
struct ProcessTree: Hashable, Sendable, CustomStringConvertible {
    var processGroup: Int32
    var marker: ProcessTreeMarker

    var description: String { "process group \(processGroup), \(ProcessTreeMarker.variable) \(marker)" }
}
