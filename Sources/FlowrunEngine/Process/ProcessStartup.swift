import CFlowrunSystem

/// What flowrun fixes about its own process before it does anything else:
/// descriptors 0-2, the signals it ignores, its descriptor limit. The call
/// comes first in `main`, before any thread starts and any file opens.
package enum ProcessStartup {
    /// - Opens /dev/null onto any of descriptors 0, 1, 2 that is closed, so a
    ///   closed stdout (`flowrun wf.yaml >&-`) never makes the first file
    ///   flowrun opens (the events file) descriptor 1, where console lines go.
    /// - Notes the signals the caller left ignored: flowrun does not handle
    ///   them (under `nohup`, a hangup does not stop the run) and its tasks
    ///   get them ignored too; every other signal is at its default in tasks.
    /// - Ignores SIGPIPE and SIGXFSZ in flowrun: a reader that left
    ///   (`flowrun wf.yaml | head -1`) or a file size limit makes a write fail
    ///   with EPIPE or EFBIG, which the console and the record handle, instead
    ///   of killing flowrun with its tasks still running.
    /// - Raises the soft RLIMIT_NOFILE to the hard limit (`ulimit -n 64` would
    ///   leave room for a dozen tasks); each task gets the caller's soft limit back.
    package static func prepare() {
        flowrun_prepare_process()
    }

    /// Whether flowrun's caller left `signal` ignored (then flowrun leaves it so).
    static func callerIgnores(_ signal: Int32) -> Bool {
        flowrun_signal_ignored_by_caller(signal) != 0
    }
}
