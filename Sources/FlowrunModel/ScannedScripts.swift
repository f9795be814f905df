import Synchronization

/// The insertion points of the scripts scanned last, by the scanned bytes
/// (the script with a marker for each expression: all a scan reads).
/// Bounded: past `capacity` scripts it starts again empty.
final class ScannedScripts: Sendable {
    static let shared = ScannedScripts()
    static let capacity = 64

    private let known = Mutex<[[UInt8]: [ShellInsertionPoint]]>([:])

    /// Scripts kept now.
    var count: Int { known.withLock { $0.count } }

    func points(for bytes: [UInt8]) -> [ShellInsertionPoint]? {
        known.withLock { $0[bytes] }
    }

    func keep(_ points: [ShellInsertionPoint], for bytes: [UInt8]) {
        known.withLock { known in
            if known.count >= Self.capacity { known.removeAll(keepingCapacity: true) }
            known[bytes] = points
        }
    }
}
