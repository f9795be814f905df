#if canImport(Glibc)
import Glibc
#endif

/// The instant a run starts: one `CLOCK_REALTIME` reading, which its id
/// names to the microsecond (`RunRecord.makeRunID`), and the
/// `CLOCK_MONOTONIC` reading taken right after it, from which the engine
/// counts `elapsed`. So the id's instant is the run's start everywhere:
/// runs sort by it (`RunHistory`), and the start a reader of `events.jsonl`
/// computes (`run_started`'s `time` minus its `elapsed`) is it.
package struct RunStart: Sendable, Equatable {
    /// Seconds and nanoseconds since the epoch (`CLOCK_REALTIME`).
    package let seconds: Int
    package let nanoseconds: Int
    /// `CLOCK_MONOTONIC` right after, in seconds: the engine's `elapsed` 0.
    package let monotonicSeconds: Double

    package init(seconds: Int, nanoseconds: Int, monotonicSeconds: Double) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
        self.monotonicSeconds = monotonicSeconds
    }

    /// Now: the wall clock read once, the monotonic clock after it.
    package static func now() -> RunStart {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        var monotonic = timespec()
        clock_gettime(CLOCK_MONOTONIC, &monotonic)
        return RunStart(seconds: wall.tv_sec, nanoseconds: wall.tv_nsec,
                        monotonicSeconds: Double(monotonic.tv_sec) + Double(monotonic.tv_nsec) / 1e9)
    }

    /// The wall-clock instant in seconds since the epoch.
    package var wallSeconds: Double { Double(seconds) + Double(nanoseconds) / 1e9 }

    /// The microseconds within the second (0 to 999,999), as the id writes them.
    package var microseconds: Int { nanoseconds / 1000 }
}
