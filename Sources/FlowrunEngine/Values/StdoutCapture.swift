#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps the last 1 MiB of a task's stdout for its stash and picks out `::progress::N` lines.
///
/// Fed stdout in chunks split anywhere (inside a line, inside a UTF-8
/// character). Rules:
/// - A progress line is, after trimming blanks (space, tab, CR), exactly
///   `::progress::N` with N from 0 to 100, digits with an optional fraction
///   (`42`, `37.5`; blanks may follow `::progress::`), and at most 128 bytes
///   long. It reports N and is left out of the stash. Any other line —
///   `::progress::150`, `::progress::abc` — is ordinary output, so nothing a
///   task prints is dropped unless it is a valid command.
/// - The stash is the last `limit` bytes of the remaining output, one
///   trailing line ending (`\n` or `\r\n`) removed, decoded as UTF-8 (invalid
///   bytes become U+FFFD; when the window starts inside a character, the
///   partial character is dropped).
///
/// - With a `spill` location, the whole of that output (progress lines left out)
///   also goes to a file once it is longer than `spillAfter` (at most
///   `limit`): the bytes kept so far, then every later byte. A `foreach` reads it from there, whole.
///
/// Memory: the window holds at most `2 × limit` bytes (it compacts when full,
/// so each byte is moved O(1) times), plus at most 128 bytes of an unfinished
/// short line that might still turn out to be a progress line. A line longer
/// than that cannot be a progress line and streams straight into the window,
/// however long it grows.
package struct StdoutCapture: Sendable {
    package static let defaultLimit = 1 << 20
    /// Longer lines are never progress lines; bounds what is held back.
    static let maxProgressLineLength = 128

    package let limit: Int
    /// Stash bytes; the stash is the last `limit` of them (plus `held`).
    private var window: [UInt8] = []
    /// The unfinished current line while it is short enough to be a progress line.
    private var held: [UInt8] = []
    /// The unfinished current line is too long to be a progress line and
    /// streams into the window.
    private var lineIsOrdinary = false
    /// All stdout bytes seen, progress lines included.
    package private(set) var byteCount = 0
    /// Bytes stored for the stash so far (progress lines excluded, `held` not yet).
    private var storedByteCount = 0

    /// Where the whole output goes once it outgrows the window (nil: nowhere).
    private let spillLocation: StdoutSpill.Location?
    /// Spill once more than this many bytes are stored (at most `limit`).
    private let spillThreshold: Int
    private var spill: StdoutSpill?

    package init(limit: Int = defaultLimit) {
        self.init(limit: limit, spill: nil)
    }

    init(limit: Int = defaultLimit, spill spillLocation: StdoutSpill.Location?, spillAfter: Int? = nil) {
        precondition(limit > 0, "the stash window needs room")
        self.limit = limit
        self.spillLocation = spillLocation
        spillThreshold = min(limit, spillAfter ?? limit)
    }

    /// Takes the next chunk; returns the last progress value completed in it.
    package mutating func append(_ chunk: UnsafeRawBufferPointer) -> Double? {
        consume(UnsafeBufferPointer(start: chunk.baseAddress?.assumingMemoryBound(to: UInt8.self), count: chunk.count))
    }

    /// Takes the next chunk; returns the last progress value completed in it.
    package mutating func append(_ chunk: some Sequence<UInt8>) -> Double? {
        if let progress = chunk.withContiguousStorageIfAvailable({ consume($0) }) { return progress }
        return Array(chunk).withUnsafeBufferPointer { consume($0) }
    }

    /// Ends the stream: an unfinished last line that is a progress line is
    /// reported and left out of the stash.
    package mutating func finish() -> Double? {
        defer { spill?.close() }
        guard let progress = heldProgress else {
            // An unfinished last line is output: stored like the others (and spilled).
            store(held)
            held.removeAll()
            return nil
        }
        held.removeAll()
        return progress
    }

    /// The file holding the whole output, when it outgrew the window and could be written.
    var spilledPath: String? { spill?.problem == nil ? spill?.path : nil }

    /// Why the whole output could not be kept on disk (nil: it could, or did not need to be).
    var spillProblem: String? { spill?.problem }

    /// The length in bytes of the whole stash value, however much of it the window kept:
    /// all output but progress lines, less one trailing line ending.
    package var valueByteCount: Int {
        let pending = pendingText
        let total = storedByteCount + pending.count
        let last = pending.last ?? window.last
        guard last == 0x0A else { return total }
        let beforeLast = pending.count >= 2 ? pending[pending.count - 2]
            : pending.count == 1 ? window.last : (window.count >= 2 ? window[window.count - 2] : nil)
        return total - (beforeLast == 0x0D && total >= 2 ? 2 : 1)
    }

    /// True when more than `limit` bytes of output were kept back from the stash's start.
    package var isTruncated: Bool { storedByteCount + pendingText.count > limit }

    /// The stash text: the last `limit` bytes, the trailing line ending removed.
    package var stash: String {
        let pending = pendingText
        if window.isEmpty && pending.isEmpty { return "" }  // most tasks: nothing to copy
        let total = window.count + pending.count
        let skip = max(0, total - limit)
        var bytes = Array(window.dropFirst(skip))
        bytes += pending.dropFirst(max(0, skip - window.count))
        var start = 0
        if isTruncated {
            // The window may begin inside a character: drop its continuation bytes.
            while start < min(3, bytes.count), bytes[start] & 0xC0 == 0x80 { start += 1 }
        }
        var end = bytes.count
        if end > start, bytes[end - 1] == 0x0A {
            end -= 1
            if end > start, bytes[end - 1] == 0x0D { end -= 1 }
        }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// How many bytes the window's storage can hold (for memory tests).
    var storageCapacity: Int { window.capacity + held.capacity }

    private var heldProgress: Double? {
        held.isEmpty ? nil : held.withUnsafeBufferPointer { Self.progress(in: $0) }
    }

    /// The unfinished line, unless it is a progress line.
    private var pendingText: [UInt8] { heldProgress == nil ? held : [] }

    // MARK: - Chunks

    private mutating func consume(_ buffer: UnsafeBufferPointer<UInt8>) -> Double? {
        let count = buffer.count
        guard count > 0 else { return nil }
        byteCount += count
        var latest: Double?
        var start = 0
        // First finish the line the previous chunk left open.
        if lineIsOrdinary || !held.isEmpty {
            let newline = Self.find(0x0A, in: buffer, from: 0, to: count)
            let lineEnd = newline ?? count
            let through = newline.map { $0 + 1 } ?? count
            if !lineIsOrdinary, held.count + lineEnd <= Self.maxProgressLineLength {
                held.append(contentsOf: buffer[0..<lineEnd])
                guard newline != nil else { return nil }
                if let progress = heldProgress {
                    latest = progress
                } else {
                    held.append(0x0A)
                    store(held)
                }
                held.removeAll(keepingCapacity: true)
            } else {
                if !held.isEmpty {
                    store(held)
                    held.removeAll(keepingCapacity: true)
                }
                store(UnsafeBufferPointer(rebasing: buffer[0..<through]))
                lineIsOrdinary = newline == nil
                if newline == nil { return nil }
            }
            start = through
        }
        // Then whole lines: stored in runs, cut only around progress lines,
        // which must hold a ':' — so only lines with one are looked at.
        var linesEnd = count
        while linesEnd > start, buffer[linesEnd - 1] != 0x0A { linesEnd -= 1 }
        var runStart = start
        var search = start
        while search < linesEnd, let colon = Self.find(0x3A, in: buffer, from: search, to: linesEnd) {
            let lineEnd = Self.find(0x0A, in: buffer, from: colon, to: linesEnd) ?? linesEnd - 1
            let lowest = max(start, lineEnd - Self.maxProgressLineLength)
            var lineStart = colon
            while lineStart > lowest, buffer[lineStart - 1] != 0x0A { lineStart -= 1 }
            if lineEnd - lineStart <= Self.maxProgressLineLength,
               lineStart == start || buffer[lineStart - 1] == 0x0A,
               let progress = Self.progress(in: UnsafeBufferPointer(rebasing: buffer[lineStart..<lineEnd])) {
                latest = progress
                store(UnsafeBufferPointer(rebasing: buffer[runStart..<lineStart]))
                runStart = lineEnd + 1
            }
            search = lineEnd + 1
        }
        store(UnsafeBufferPointer(rebasing: buffer[runStart..<linesEnd]))
        // Last, the unfinished line.
        let tail = UnsafeBufferPointer(rebasing: buffer[linesEnd..<count])
        if tail.count <= Self.maxProgressLineLength {
            held.append(contentsOf: tail)
        } else {
            store(tail)
            lineIsOrdinary = true
        }
        return latest
    }

    /// Appends stash bytes, keeping at least the last `limit` and at most `2 × limit`.
    private mutating func store(_ bytes: UnsafeBufferPointer<UInt8>) {
        let count = bytes.count
        guard count > 0 else { return }
        if let spill {
            spill.write(bytes)
        } else if let spillLocation, storedByteCount + count > spillThreshold {
            // Nothing was dropped from the window yet: it holds all output so far.
            let spill = StdoutSpill(path: spillLocation.path)
            self.spill = spill
            window.withUnsafeBufferPointer { spill.write($0) }
            spill.write(bytes)
        }
        storedByteCount += count
        if count >= limit {
            window.removeAll(keepingCapacity: true)
            window.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[(count - limit)...]))
            return
        }
        if window.count + count > 2 * limit {
            window.removeFirst(window.count + count - limit)
        }
        if window.count + count > window.capacity, window.count + count > limit {
            // Grow once to the final size instead of doubling past it.
            window.reserveCapacity(2 * limit)
        }
        window.append(contentsOf: bytes)
    }

    private mutating func store(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { store($0) }
    }

    // MARK: - Bytes

    /// `::progress::N` between blanks, N from 0 to 100; else nil.
    static func progress(in line: UnsafeBufferPointer<UInt8>) -> Double? {
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0B || byte == 0x0C }
        var start = 0, end = line.count
        while start < end, isBlank(line[start]) { start += 1 }
        while end > start, isBlank(line[end - 1]) { end -= 1 }
        let prefix = "::progress::".utf8
        guard end - start > prefix.count,
              UnsafeBufferPointer(rebasing: line[start..<start + prefix.count]).elementsEqual(prefix)
        else { return nil }
        start += prefix.count
        while start < end, isBlank(line[start]) { start += 1 }
        let number = UnsafeBufferPointer(rebasing: line[start..<end])
        guard let value = progressValue(number), (0...100).contains(value) else { return nil }
        return value
    }

    /// `DIGITS[.DIGITS]`.
    private static func progressValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        var integer = 0
        var index = 0
        while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
            integer = min(integer * 10 + Int(bytes[index] - 0x30), 1000)  // capped: only 0...100 matters
            index += 1
        }
        guard index > 0 else { return nil }
        if index == bytes.count { return Double(integer) }  // the common case, without a String
        guard bytes[index] == 0x2E, index + 1 < bytes.count,
              bytes[(index + 1)...].allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        return Double(String(decoding: bytes, as: UTF8.self))
    }

    /// The first `byte` in `buffer[from..<to]` (memchr: stdout can be hundreds of MB).
    private static func find(_ byte: UInt8, in buffer: UnsafeBufferPointer<UInt8>, from: Int, to: Int) -> Int? {
        guard from < to, let base = buffer.baseAddress,
              let hit = memchr(base + from, Int32(byte), to - from)
        else { return nil }
        return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(hit))
    }
}
