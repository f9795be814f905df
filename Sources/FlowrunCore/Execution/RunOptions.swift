/// How to run a plan: choices from the command line.
public struct RunOptions: Sendable {
    public var runID: String
    /// The run record's folder (`--log-dir`), nil for `.flowrun/runs`.
    public var logDirectory: String?

    public init(runID: String = RunRecord.makeRunID(), logDirectory: String? = nil) {
        self.runID = runID
        self.logDirectory = logDirectory
    }
}

/// How a run ended.
public struct RunOutcome: Sendable {
    /// 0 nothing failed, 1 something failed, 124 run timeout, 128+N signal N (SPEC §7).
    public var exitCode: Int32
    public var recordDirectory: String
}
