#if canImport(Glibc)
import Glibc
#endif

/// flowrun's file descriptor limit (RLIMIT_NOFILE, raised to the hard limit
/// at start: `ProcessStartup`), what flowrun needs of it, and what it says
/// when descriptors run out (issue 32.10: a limit of 8 or 12 crashed the
/// engine, one of 16 or 24 made a fan-out crawl at 5 s a member).
///
/// What a run holds: descriptors 0-2, the supervisor's link, the record's
/// four folders and events.jsonl, the event loop's epoll and wake pipe, the
/// SIGCHLD signalfd, Dispatch's own epoll, eventfd and timerfds (which it
/// cannot do without: it traps), and brief ones (a /proc scan, an outputs
/// file, summary.json); about 24, measured. Each running task adds three
/// (its two pipes and its log).
package enum DescriptorLimit {
    /// What a run opens beyond what is open when it starts (the record,
    /// the loops, Dispatch's, a brief /proc scan) and one task's three.
    static let openedByARun = 24

    /// How many descriptors flowrun may have open now.
    package static var current: Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(clamping: min(limit.rlim_cur, 1 << 40))  // unlimited is all ones
    }

    /// Why a run cannot start under the current limit, or nil: flowrun's
    /// own descriptors and one task's would not fit beside those open now
    /// (0-2, and any a careless parent left open). Asked before the record
    /// is made and before Dispatch starts (its event loop traps when it
    /// cannot get a descriptor).
    package static func problemForARun() -> String? {
        let limit = current
        let open = openCount()
        let needed = open + openedByARun
        guard limit < needed else { return nil }
        return "flowrun: the file descriptor limit is \(limit) (ulimit -n, the hard limit included) and \(open) are open already; a run needs at least \(needed) here (about \(openedByARun - 3) more for flowrun itself and 3 for each running task): raise it, e.g. ulimit -n 1024"
    }

    /// What the run says when a task found no descriptor left while no task
    /// process ran to free one (an `http:` task's socket, or flowrun's own
    /// descriptors, hold them).
    package static func exhausted(openNow: Int) -> String {
        "flowrun: out of file descriptors: a task could not get its pipes while no task process ran to free any; flowrun may have \(current) open (ulimit -n) and holds \(openNow): raise the limit (ulimit -n 1024) or lower max_parallel"
    }

    /// How many descriptors flowrun has open (the entries of /proc/self/fd).
    static func openCount() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 16 }
        defer { closedir(directory) }
        var count = -1  // opendir's own
        while readdir(directory) != nil { count += 1 }
        return max(0, count - 2)  // . and ..
    }
}
