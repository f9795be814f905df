/// How to run a plan: choices from the command line.
package struct RunOptions: Sendable {
    /// The folder run folders are made in (`--log-dir`), nil for `.flowrun/runs`.
    /// The run's id is chosen when its folder is made (`RunRecord`).
    package var logDirectory: String?

    package init(logDirectory: String? = nil) {
        self.logDirectory = logDirectory
    }
}

/// How a run ended.
package struct RunOutcome: Sendable {
    /// 0 nothing failed, 1 something failed, 124 run timeout, 128+N signal N (SPEC §7).
    package var exitCode: Int32
    package var recordDirectory: String
}
