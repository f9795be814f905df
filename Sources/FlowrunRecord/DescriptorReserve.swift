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

    /// `body`'s open, and once more with a reserved descriptor given back
    /// when it failed for want of one. `body` returns -1 with errno set.
    static func opening(_ body: () -> Int32) -> Int32 {
        let opened = body()
        guard opened < 0, errno == EMFILE || errno == ENFILE else { return opened }
        let reason = errno
        guard let spare = held.withLock({ $0.popLast() }) else {
            errno = reason
            return opened
        }
        close(spare)
        return body()
    }

    /// How many are held now (tests).
    package static var count: Int { held.withLock { $0.count } }
}
