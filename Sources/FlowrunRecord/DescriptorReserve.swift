#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A few descriptors held for the record's own files (a task's log, the
/// small-log pack and its index, a logs shard): when tasks have taken every
/// other descriptor (EMFILE, ENFILE), the record's open gives one of these
/// back and tries again, so the record is never what runs short (issue 32.10:
/// `cannot write …/logs/small.index`, a task failed by its log). Descriptors
/// of /dev/null, close-on-exec; filled when a run folder is made and again
/// as tasks end (`refill`).
package enum DescriptorReserve {
    /// Enough for the record's opens between two task ends: a log or two,
    /// the pack and its index, a shard.
    package static let size = 4

    private static let held = Mutex<[Int32]>([])

    /// Opens what is missing of the reserve, as far as the limit lets it.
    package static func refill() {
        held.withLock { held in
            while held.count < size {
                let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { return }
                held.append(descriptor)
            }
        }
    }

    /// `body`'s open, tried again with reserved descriptors given back one
    /// by one while it fails for want of one. Another thread may take a
    /// given-back descriptor first (a request's socket), and work the run is
    /// ending (cancelled requests) closes its own a moment later: with the
    /// reserve spent, up to 40 pauses of 5 ms (only here, at the limit), then
    /// -1 with errno set.
    static func opening(_ body: () -> Int32) -> Int32 {
        var opened = body()
        var pauses = 0
        while opened < 0, errno == EMFILE || errno == ENFILE {
            let reason = errno
            if let spare = held.withLock({ $0.popLast() }) {
                close(spare)
            } else if pauses < 40 {
                pauses += 1
                usleep(5_000)
            } else {
                errno = reason
                return opened
            }
            opened = body()
        }
        return opened
    }

    /// How many are held now (tests).
    package static var count: Int { held.withLock { $0.count } }
}
