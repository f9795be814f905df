#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues
import CFlowrunSystem

/// The run records in one folder (`.flowrun/runs`, or `--log-dir`): which
/// runs there are, which one is the latest, which one a RUN argument names,
/// and whether a run is still going.
///
/// The reader obeys the writer's rules (SPEC §11, SECURITY.md): the folder
/// is opened as `RecordBase` opens it for writing, everything inside it
/// relative to a handle on it and never through a link, and only run
/// folders and a `latest` of the record's owner count (`owner`): what
/// another user planted in a shared folder is neither listed, nor the
/// latest, nor resumed.
package final class RunHistory {
    /// The folder as the user named it.
    package let path: String
    /// The folder, held for every read below.
    let descriptor: Int32
    /// Whose runs count: yours; for root, the record folder's owner's
    /// (root reading a user's `.flowrun/runs` sees that user's runs).
    package let owner: UInt32

    package struct Problem: Error, CustomStringConvertible {
        package var description: String
    }

    /// Opens `path` (`--log-dir`) under the writer's rules; a folder that
    /// is not there is a problem that says where runs are recorded.
    package convenience init(path: String) throws(Problem) {
        let descriptor: Int32
        do throws(RecordBase.Refusal) {
            descriptor = try RecordBase.open(path, making: false, for: .read)
        } catch {
            throw Self.problem(error, path: path)
        }
        self.init(descriptor: descriptor, path: path)
    }

    /// Opens `.flowrun/runs` in `folder` (`.`, or the folder the upward
    /// search found) under the writer's rules.
    package convenience init(recordIn folder: String) throws(Problem) {
        let path = folder == "." ? ".flowrun/runs" : (folder == "/" ? "" : folder) + "/.flowrun/runs"
        let descriptor: Int32
        do throws(RecordBase.Refusal) {
            descriptor = try RecordBase.openDefault(in: folder, making: false, for: .read)
        } catch {
            throw Self.problem(error, path: path)
        }
        self.init(descriptor: descriptor, path: path)
    }

    private init(descriptor: Int32, path: String) {
        self.path = path
        self.descriptor = descriptor
        var info = stat()
        let me = geteuid()
        owner = me == 0 && fstat(descriptor, &info) == 0 ? info.st_uid : me
    }

    private static func problem(_ refusal: RecordBase.Refusal, path: String) -> Problem {
        if refusal.isMissing {
            return Problem(description: "no runs recorded in \(TerminalText.escaped(path)) yet (every run of a workflow records itself there)")
        }
        return Problem(description: TerminalText.escaped(refusal.description))
    }

    deinit { close(descriptor) }

    /// A run id: `20261122-140307.482915-4f1c09a2b7d3` (`RunRecord.makeRunID`):
    /// eight digits, a dash, six digits, a dot, six digits (microseconds),
    /// a dash, twelve lowercase hex digits; 35 characters. Or one from
    /// before microseconds, `20261122-140307-4f1c09a2b7d3e865`: eight
    /// digits, a dash, six digits, a dash, sixteen lowercase hex digits; 32
    /// characters (users keep such records). Only such names are runs:
    /// nothing else in the folder is read, listed or pruned.
    package static func isRunID(_ name: some StringProtocol) -> Bool {
        var bytes = name.utf8.makeIterator()
        func next(_ count: Int, _ accepts: (UInt8) -> Bool) -> Bool {
            for _ in 0..<count {
                guard let byte = bytes.next(), accepts(byte) else { return false }
            }
            return true
        }
        let digit = { (byte: UInt8) in byte &- UInt8(ascii: "0") < 10 }
        let hex = { (byte: UInt8) in digit(byte) || byte &- UInt8(ascii: "a") < 6 }
        let dash = { (byte: UInt8) in byte == UInt8(ascii: "-") }
        guard next(8, digit), next(1, dash), next(6, digit) else { return false }
        switch bytes.next() {
        case UInt8(ascii: "-"):
            guard next(16, hex) else { return false }
        case UInt8(ascii: "."):
            guard next(6, digit), next(1, dash), next(12, hex) else { return false }
        default:
            return false
        }
        return bytes.next() == nil
    }

    /// How long a run id is (`RunRecord.makeRunID`).
    package static let runIDLength = 35

    /// Whether run id `id` names its start to the microsecond (the
    /// 35-character shape): such ids sort by name in the order their runs
    /// started, within one second too.
    static func namesMicroseconds(_ id: String) -> Bool {
        id.utf8.count > 15 && id.utf8[id.utf8.index(id.utf8.startIndex, offsetBy: 15)] == UInt8(ascii: ".")
    }

    /// Every run's id, oldest first (ids start with their local start time).
    package func runIDs() -> [String] {
        Self.runIDs(in: descriptor, ownedBy: owner)
    }

    /// The run folders in `folder` that `owner` owns, oldest first: a
    /// folder another user made there (a future-dated id, say) is not a run
    /// of this record, so it is never listed, latest, resumed or pruned,
    /// nor counted toward `--keep`.
    static func runIDs(in folder: Int32, ownedBy owner: uid_t) -> [String] {
        chronological(unorderedRunIDs(in: folder, ownedBy: owner), in: folder)
    }

    /// The same folders in no particular order (no record is opened).
    static func unorderedRunIDs(in folder: Int32, ownedBy owner: uid_t) -> [String] {
        var ids: [String] = []
        for name in FolderListing.names(in: folder) ?? [] {
            guard isRunID(name) else { continue }
            var info = stat()
            if fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == owner {
                ids.append(name)
            }
        }
        return ids
    }

    /// The `count` oldest of `ids`: by name (ids start with their local
    /// start time, to the microsecond), except in a second that has a run
    /// id from before microseconds (the second flowrun was upgraded in):
    /// that second's runs go by their `run_started` time, read only when the
    /// cut falls inside it (one record's first line each, where
    /// `chronological` reads every such second's: a run prunes one record
    /// most times).
    static func oldest(_ count: Int, of ids: [String], in folder: Int32) -> [String] {
        guard count > 0 else { return [] }
        var sorted = ids.sorted()
        guard count < sorted.count else { return sorted }
        let cut = sorted[count]
        guard sameSecond(sorted[count - 1], cut) else { return Array(sorted.prefix(count)) }
        let start = sorted.firstIndex { sameSecond($0, cut) } ?? count
        var end = count
        while end < sorted.count, sameSecond(sorted[end], cut) { end += 1 }
        sorted.replaceSubrange(start..<end, with: chronological(second: sorted[start..<end], in: folder))
        return Array(sorted.prefix(count))
    }

    /// `ids` oldest first: by name, and in a second that has a run id from
    /// before microseconds, all of that second's runs by their
    /// `run_started` time (to the millisecond), read only for those.
    static func chronological(_ ids: [String], in folder: Int32) -> [String] {
        var sorted = ids.sorted()
        var start = 0
        while start < sorted.count {
            var end = start + 1
            while end < sorted.count, sameSecond(sorted[end], sorted[start]) { end += 1 }
            if end - start > 1 {
                sorted.replaceSubrange(start..<end, with: chronological(second: sorted[start..<end], in: folder))
            }
            start = end
        }
        return sorted
    }

    /// The runs of one second (`ids`, sorted by name), oldest first: as
    /// they are when every id names its microseconds (no record is
    /// opened); else every one by its `run_started` time, ties by name.
    private static func chronological(second ids: ArraySlice<String>, in folder: Int32) -> [String] {
        guard !ids.allSatisfy(namesMicroseconds) else { return Array(ids) }
        let times = ids.map { id in (id, startTime(of: id, in: folder) ?? 0) }
        return times.sorted { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }.map(\.0)
    }

    /// Whether two run ids name the same second (`YYYYMMDD-HHMMSS`), by
    /// `memcmp`: `hasPrefix` on a `Substring` compared Characters (8 K
    /// instructions a call) and `elementsEqual` walked iterators (1 K), and a
    /// benchmark's loop makes 50 calls a run.
    private static func sameSecond(_ one: String, _ other: String) -> Bool {
        var one = one, other = other
        return one.withUTF8 { first in
            other.withUTF8 { second in
                let length = min(first.count, 15)
                return length == min(second.count, 15) && (length == 0 || memcmp(first.baseAddress!, second.baseAddress!, length) == 0)
            }
        }
    }

    /// When run `id` started, from its first event (nil if unreadable).
    static func startTime(of id: String, in folder: Int32) -> Double? {
        // What flowrun writes first, read without a JSON parse, and opened in
        // one call that follows no link (a folder of runs started in one
        // second — a benchmark's loop — has pruning read each one's start).
        let events = flowrun_open_beneath(folder, id + "/events.jsonl", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        if events >= 0 {
            var head = [UInt8](repeating: 0, count: 128)
            let count = head.withUnsafeMutableBytes { pread(events, $0.baseAddress, $0.count, 0) }
            close(events)
            if count > startedPrefix.count, let time = startTime(in: head[..<count]) { return time }
        }
        // Another first line, or a kernel without openat2: the line parsed, opened a step at a time.
        let run = openat(folder, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard run >= 0 else { return nil }
        defer { close(run) }
        guard let line = RecordFile.firstLine(run, "events.jsonl"),
              let event = JSONValue.parse(bytes: Array(line)) else { return nil }
        return event["time"]?.string.flatMap(RecordedRun.epochSeconds)
    }

    /// The start time in a first line that begins as flowrun writes it.
    private static func startTime(in head: ArraySlice<UInt8>) -> Double? {
        guard head.starts(with: startedPrefix),
              let end = head[(head.startIndex + startedPrefix.count)...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return RecordedRun.epochSeconds(String(decoding: head[(head.startIndex + startedPrefix.count)..<end], as: UTF8.self))
    }

    /// How every `events.jsonl` flowrun writes begins, up to its start time.
    private static let startedPrefix = Array(#"{"event":"run_started","time":""#.utf8)

    /// The run `latest` names when it names one of `runIDs()`, else the newest by id.
    package func latestID() -> String? {
        let ids = runIDs()
        if let named = Self.readLatest(in: descriptor, ownedBy: owner), ids.contains(named) { return named }
        return ids.last
    }

    /// What `latest` holds, if it is a link of `owner`'s to a run id: read
    /// through a handle on the link itself (`O_PATH|O_NOFOLLOW`), so the
    /// link whose owner was checked is the one read.
    static func readLatest(in folder: Int32, ownedBy owner: uid_t) -> String? {
        let link = openat(folder, "latest", RecordBase.openPath | O_NOFOLLOW | O_CLOEXEC)
        guard link >= 0 else { return nil }
        defer { close(link) }
        var info = stat()
        guard fstat(link, &info) == 0, info.st_mode & S_IFMT == S_IFLNK, info.st_uid == owner else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlinkat(link, "", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return isRunID(target) ? target : nil
    }

    /// The run `argument` names: nil or `latest` for the latest, an id, or
    /// a prefix of exactly one id. An unknown or ambiguous one is a problem
    /// that lists what there is.
    package func resolve(_ argument: String?) throws(Problem) -> String {
        let ids = runIDs()
        guard !ids.isEmpty else {
            throw Problem(description: "no runs recorded in \(TerminalText.escaped(path)) yet (every run of a workflow records itself there)")
        }
        guard let argument, argument != "latest" else { return latestID() ?? ids[ids.count - 1] }
        if ids.contains(argument) { return argument }
        let matches = argument.isEmpty ? [] : ids.filter { $0.hasPrefix(argument) }
        if matches.count == 1 { return matches[0] }
        let shown = TerminalText.escaped(argument)
        if matches.isEmpty, let stranger = Self.ownerOfEntry(argument, in: descriptor), stranger != owner {
            throw Problem(description: "run \(shown) in \(TerminalText.escaped(path)) belongs to uid \(stranger), not to \(owner == geteuid() ? "you" : "the record's owner") (uid \(owner)): flowrun reads only its owner's runs (SECURITY.md)")
        }
        if matches.isEmpty {
            throw Problem(description: "no run in \(TerminalText.escaped(path)) starts with '\(shown)'; the latest is \(latestID() ?? ids[ids.count - 1]) (flowrun runs lists them)")
        }
        let listed = matches.suffix(20).reversed().map { "  " + $0 }.joined(separator: "\n")
        let more = matches.count > 20 ? "\n  … and \(matches.count - 20) older" : ""
        throw Problem(description: "'\(shown)' matches \(matches.count) runs in \(TerminalText.escaped(path)); give more of the id:\n\(listed)\(more)")
    }

    /// Whether a flowrun process still holds run `id`'s folder (its `flock`).
    package func isLive(_ id: String) -> Bool {
        Self.isLive(id, in: descriptor)
    }

    /// The owner of the entry `name` (not followed), nil when there is none.
    static func ownerOfEntry(_ name: String, in folder: Int32) -> uid_t? {
        guard isRunID(name) else { return nil }
        var info = stat()
        return fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info.st_uid : nil
    }

    static func isLive(_ id: String, in folder: Int32) -> Bool {
        let run = openat(folder, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard run >= 0 else { return false }
        defer { close(run) }
        // A shared lock taken and dropped at once: it fails only while the run holds its exclusive one.
        if flock(run, LOCK_SH | LOCK_NB) == 0 { return false }
        return errno == EWOULDBLOCK
    }

    /// Run `id`'s folder as shown to the user.
    package func folderPath(_ id: String) -> String {
        path + "/" + id
    }
}
