/// The lines one task printed since the live view's last frame, with
/// `--stream`: the most recent `capacity` of them, each cut to `lineBytes`,
/// and how many fell out. However much a task prints between two frames,
/// this holds a few hundred kilobytes at most; the log file has it all.
package struct RecentLines {
    /// Lines kept per task between two frames (ten frames a second).
    static let capacity = 64
    /// Bytes kept of one line: wider than any terminal.
    static let lineBytes = 4096

    private var ring: [String] = []
    /// Where the oldest line is once the ring is full.
    private var oldest = 0
    /// Lines that fell out of the ring or were never kept.
    private(set) var skipped = 0
    /// Bytes of the lines in the ring.
    private(set) var bytes = 0

    /// Keeps `line`, pushing out the oldest when full; returns the change in `bytes`.
    mutating func append(_ line: String) -> Int {
        let size = line.utf8.count
        guard ring.count == Self.capacity else {
            ring.append(line)
            bytes += size
            return size
        }
        let change = size - ring[oldest].utf8.count
        ring[oldest] = line
        oldest = (oldest + 1) % Self.capacity
        skipped += 1
        bytes += change
        return change
    }

    /// A line not kept (the view's whole inbox is full).
    mutating func skip() {
        skipped += 1
    }

    /// The kept lines, oldest first.
    var lines: [String] {
        Array(ring[oldest...] + ring[..<oldest])
    }

    /// `line` cut to `lineBytes` bytes, `…` added when cut (a character cut
    /// in half shows as U+FFFD).
    static func cut(_ line: String) -> String {
        guard line.utf8.count > lineBytes else { return line }
        return String(decoding: line.utf8.prefix(lineBytes), as: UTF8.self) + "…"
    }
}
