import CFlowrunSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Whether a task may have written its `$FLOWRUN_OUTPUT` file, known without
/// looking it up: most tasks write none, and looking up a name that is not
/// there is a directory search (4–5 µs per task here, on the path from one
/// task's end to the next one's start).
///
/// dnotify has the kernel send SIGIO when anything in `outputs/` is created,
/// written or renamed (or in the run folder, should a task replace
/// `outputs/`). SIGIO is blocked and collected by a signalfd that is read
/// when an attempt ends: the signal is raised by the writing task itself,
/// so it is pending before that task has exited. An attempt during which
/// no SIGIO arrived wrote nothing there.
/// (inotify would tell more, but closing an inotify instance waits for an
/// RCU grace period: 7–16 ms at the end of most runs here.)
///
/// Once `outputs/` is no longer the folder being watched (a task replaced
/// it) or the watch could not be set up, every attempt looks, as without it.
/// Used on the engine's queue only.
final class OutputFilesWatch: @unchecked Sendable {
    // @unchecked: engine-queue confined.
    private let outputsDirectory: String
    private let outputs: Int32
    private let runFolder: Int32
    /// The arrivals' generation this watch last checked `outputs/` at.
    private var checkedGeneration: UInt64 = 0
    private var reliable = true

    /// Nil where dnotify is not available; then every attempt looks.
    /// Make the first one before flowrun starts any thread that should not take SIGIO.
    init?(runDirectory: String, outputsDirectory: String) {
        self.outputsDirectory = outputsDirectory
        // SIGIO handled before any notice can be sent (by default it ends the process).
        let collected = SignalArrivals.isAvailable
        outputs = flowrun_notify_on_entry_changes(outputsDirectory, 1)
        // Not its writes: flowrun appends to events.jsonl there all the time.
        runFolder = flowrun_notify_on_entry_changes(runDirectory, 0)
        guard collected, outputs >= 0, runFolder >= 0 else {
            for descriptor in [outputs, runFolder] where descriptor >= 0 { close(descriptor) }
            return nil
        }
        checkedGeneration = SignalArrivals.generation
    }

    // flowrun exits without freeing the engine: the notices last the whole run.
    deinit {
        close(outputs)
        close(runFolder)
    }

    /// Taken when an attempt starts, for `mayHaveWritten(since:)`.
    var stamp: UInt64 { SignalArrivals.generation }

    /// Whether anything was written in `outputs/` since `stamp` was taken
    /// (or whether that can no longer be told).
    func mayHaveWritten(since stamp: UInt64) -> Bool {
        let current = SignalArrivals.collect()
        if current != checkedGeneration {
            checkedGeneration = current
            if reliable { reliable = stillWatchingOutputs() }
        }
        return !reliable || current != stamp
    }

    /// Whether `outputs/` is still the folder the watch was set on.
    private func stillWatchingOutputs() -> Bool {
        var watched = stat()
        var current = stat()
        guard fstat(outputs, &watched) == 0, stat(outputsDirectory, &current) == 0 else { return false }
        return watched.st_dev == current.st_dev && watched.st_ino == current.st_ino
    }

    /// SIGIO, for the whole process: every watch's notices come as the same
    /// signal, so any arrival counts for all of them (a run sees another
    /// run's writes as its own, never the other way round).
    private enum SignalArrivals {
        private static let state = Mutex((descriptor: flowrun_sigio_signalfd(), generation: UInt64(0)))

        static var isAvailable: Bool { state.withLock { $0.descriptor >= 0 } }

        /// The count of arrivals seen so far.
        static var generation: UInt64 { state.withLock { $0.generation } }

        /// Reads what arrived since, and returns the new count.
        static func collect() -> UInt64 {
            state.withLock { state in
                if state.descriptor >= 0, flowrun_sigio_arrived(state.descriptor) != 0 { state.generation &+= 1 }
                return state.generation
            }
        }
    }
}
