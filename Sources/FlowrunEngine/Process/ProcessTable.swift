import Glibc

/// One process as /proc/PID/stat showed it at one moment.
struct ProcessEntry: Hashable, Sendable {
    var pid: Int32
    /// The state letter: R, S, D, T, Z (zombie), X (dead), …
    var state: UInt8
    var parent: Int32
    var processGroup: Int32
    var session: Int32
    /// Clock ticks after boot; with `pid` it names this process and no later
    /// one that reuses the pid.
    var startTime: UInt64

    /// A zombie (or dead) process has exited; it only waits to be reaped.
    var hasExited: Bool { state == UInt8(ascii: "Z") || state == UInt8(ascii: "X") }

    /// This process and no later one that reuses its pid, whatever its state.
    var identity: ProcessIdentity { ProcessIdentity(pid: pid, startTime: startTime) }
}

/// A process across pid reuse: its pid and start time.
struct ProcessIdentity: Hashable, Sendable {
    var pid: Int32
    var startTime: UInt64
}

/// Reads processes out of /proc. Processes come and go while we read: one
/// that vanishes half-way is simply not there.
enum ProcessTable {
    /// The pids of every process (thread-group leaders, not threads).
    static func processIDs() -> [Int32] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var pids: [Int32] = []
        while let item = readdir(directory) {
            let pid = withUnsafeBytes(of: item.pointee.d_name) { name -> Int32 in
                var value: Int32 = 0
                for byte in name {
                    if byte == 0 { break }
                    guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), value < Int32.max / 10 else { return 0 }
                    value = value * 10 + Int32(byte - UInt8(ascii: "0"))
                }
                return value
            }
            if pid > 0 { pids.append(pid) }
        }
        return pids
    }

    /// /proc/PID/stat, or nil if the process is gone.
    static func entry(_ pid: Int32) -> ProcessEntry? {
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = read(path: "/proc/\(pid)/stat", into: &buffer, limit: 1024)
        guard count > 0 else { return nil }
        // "pid (comm) S ppid pgrp session tty tpgid flags minflt cminflt majflt
        // cmajflt utime stime cutime cstime priority nice threads itreal
        // starttime …": comm may hold spaces and ')', so start after the last ')'.
        guard let close = buffer[..<count].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = buffer[(close + 1)..<count].split(separator: UInt8(ascii: " "), maxSplits: 21)
        guard fields.count >= 20, let state = fields[0].first else { return nil }
        func number(_ index: Int) -> Int64 {
            var value: Int64 = 0
            var negative = false
            for byte in fields[index] {
                if byte == UInt8(ascii: "-") { negative = true; continue }
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
                value = value &* 10 &+ Int64(byte - UInt8(ascii: "0"))
            }
            return negative ? -value : value
        }
        return ProcessEntry(
            pid: pid, state: state, parent: Int32(truncatingIfNeeded: number(1)),
            processGroup: Int32(truncatingIfNeeded: number(2)), session: Int32(truncatingIfNeeded: number(3)),
            startTime: UInt64(max(0, number(19))))
    }

    /// Whether /proc/PID belongs to `uid` (a process's /proc directory is
    /// owned by its effective uid).
    static func isOwned(_ pid: Int32, by uid: uid_t) -> Bool {
        var info = stat()
        return stat("/proc/\(pid)", &info) == 0 && info.st_uid == uid
    }

    /// The ':'-separated components of the process's FLOWRUN_TREE variable as
    /// it was at exec: [] when it has none, nil when its environment cannot be
    /// read (gone, or not ours). `buffer` is scratch space reused across calls.
    static func treeMarkers(_ pid: Int32, buffer: inout [UInt8]) -> [Substring]? {
        let count = read(path: "/proc/\(pid)/environ", into: &buffer, limit: 1 << 20)
        guard count >= 0 else { return nil }
        let prefix = Array((ProcessTreeMarker.variable + "=").utf8)
        var start = 0
        while start < count {
            let end = buffer[start..<count].firstIndex(of: 0) ?? count
            if end - start > prefix.count, buffer[start..<(start + prefix.count)].elementsEqual(prefix) {
                let value = String(decoding: buffer[(start + prefix.count)..<end], as: UTF8.self)
                return value.split(separator: ":")
            }
            start = end + 1
        }
        return []
    }

    /// Reads a whole small file into `buffer` (growing it up to `limit`
    /// bytes); returns the byte count, or -1 if it cannot be read.
    private static func read(path: String, into buffer: inout [UInt8], limit: Int) -> Int {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        var total = 0
        while true {
            if total == buffer.count {
                guard buffer.count < limit else { return total }
                buffer.append(contentsOf: repeatElement(0, count: min(limit, buffer.count * 2 + 4096) - buffer.count))
            }
            let got = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + total, $0.count - total) }
            if got < 0 {
                if errno == EINTR { continue }
                return -1
            }
            if got == 0 { return total }
            total += got
        }
    }
}
