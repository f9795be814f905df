import CFlowrunSystem

/// How flowrun asks glibc's allocator to behave, before a workflow is read
/// (with `mallopt`, for flowrun only: tasks start with glibc's defaults).
enum MallocTuning {
    /// Blocks of 128 KB or more (a plan's steps, the run's nodes) get their
    /// own mapping, returned to the system when freed. By default glibc
    /// raises that threshold, up to 32 MB, each time such a block is freed,
    /// so the next large arrays land in the heap beside small ones and the
    /// space they leave is held: at 20,000 tasks 34.5 MB peak RSS instead of
    /// 30.0 MB (docs/BENCHMARKS.md, "Memory per task"). Setting it fixes it.
    static func keepLargeBlocksMapped() {
        flowrun_set_mmap_threshold(128 * 1024)
        // Two arenas, not one per thread: the queues that encode events and
        // format console lines each got an arena of their own, and 20,000
        // flat tasks peaked 1.5–2 MB higher. One arena was as small but made
        // a million-member fan-out 6 % slower (docs/BENCHMARKS.md).
        flowrun_set_arena_max(2)
    }
}
