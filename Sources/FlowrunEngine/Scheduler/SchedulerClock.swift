#if canImport(Glibc)
import Glibc
#endif

/// Where the scheduler reads "now" (seconds on a monotonic clock): it has
/// no clock of its own, so a unit test hands it one it moves by hand.
protocol SchedulerClock {
    var now: Double { get }
}

/// The run's clock: CLOCK_MONOTONIC, the one `DispatchTime` and the
/// engine's timers count on.
struct MonotonicSchedulerClock: SchedulerClock {
    var now: Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
