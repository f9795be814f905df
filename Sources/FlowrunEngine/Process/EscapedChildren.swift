#if canImport(Glibc)
import Glibc
#endif

/// Children of flowrun that are not task shells: descendants that escaped
/// their group and were re-parented to flowrun, the child subreaper.
enum EscapedChildren {
    /// Whether flowrun has a child that is not one of `leaders` (the running
    /// task shells). Orphans are re-parented to the subreaper's main thread
    /// (flowrun never spawns from it), so one file tells: its `children`.
    /// `leaders` is asked for only when that file lists anyone (a task shell
    /// lands there when the Dispatch thread that spawned it exits).
    static func exist(besides leaders: () -> Set<Int32>) -> Bool {
        guard childrenFile >= 0 else { return false }
        // One pread from the start regenerates the list: no open and close per look.
        var start = ListStart()
        let count = start.read(from: childrenFile)
        guard count > 0 else { return false }
        // More than fits here: read it whole.
        let text = count < ListStart.capacity ? start.text(count: count) : wholeChildrenFile()
        let running = leaders()
        return text.split(separator: " ").contains { Int32($0).map { !running.contains($0) } ?? false }
    }

    /// The main thread's `children` file, open for the life of the process
    /// (flowrun's pid does not change); -1 if it cannot be read.
    private static let childrenFile: Int32 = {
        let me = getpid()
        return open("/proc/\(me)/task/\(me)/children", O_RDONLY | O_CLOEXEC)
    }()

    private static func wholeChildrenFile() -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { pread(childrenFile, $0.baseAddress, $0.count, off_t(bytes.count)) }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The start of the `children` list, read into inline storage: most
    /// looks find it empty or a few pids long, and allocate nothing.
    private struct ListStart {
        static let capacity = 64
        private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)

        /// `pread`'s result: the bytes read from the file's start.
        mutating func read(from descriptor: Int32) -> Int {
            withUnsafeMutableBytes(of: &storage) { pread(descriptor, $0.baseAddress, Self.capacity, 0) }
        }

        func text(count: Int) -> String {
            withUnsafeBytes(of: storage) { String(decoding: $0[..<count], as: UTF8.self) }
        }
    }
}
