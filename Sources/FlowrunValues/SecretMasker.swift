import CFlowrunSystem
#if canImport(Glibc)
import Glibc
#endif

/// Replaces every occurrence of every secret value with `***` in what
/// flowrun shows and stores (SPEC §11). What tasks receive keeps the real
/// values; this is for the console, logs, events, summary and plans.
///
/// Matching is exact and byte-wise. Where secrets overlap in the text
/// (`abcd` and `cdef` in `abcdef`), the whole covered stretch becomes one
/// `***`, so no part of either shows; at one position the longest secret is
/// tried first. A multi-line secret is also masked line by line (each line
/// of at least `minimumLength` bytes), as a task may print it one line at a
/// time or with other line breaks. Each secret's JSON-escaped, URL-encoded
/// and base64 forms (`SecretEncodings`) are masked as secrets of their own.
///
/// Secrets shorter than `minimumLength` bytes are refused when the run is
/// planned (`Planner`): masking a 1-3 byte value would turn every word that
/// contains it into `***` and make logs unreadable, and so short a value
/// protects nothing anyway.
///
/// Immutable after init, so one masker is shared by every thread.
package final class SecretMasker: @unchecked Sendable {
    // @unchecked: the tables are written once in init and only read after.
    package static let replacement = "***"
    /// The shortest value accepted as a secret, in bytes.
    package static let minimumLength = 4

    // Each secret is found with glibc's memmem (~11 GB/s per secret here);
    // the first-byte groups serve only the few bytes at a chunk's end that
    // may begin a secret. Tables in raw memory: no bounds checks or retains.

    /// Every secret's bytes, one after the other, grouped by first byte, longest first in a group.
    private let storage: UnsafeMutablePointer<UInt8>
    /// Secret `i` is `lengths[i]` bytes at `storage + offsets[i]`.
    private let offsets: UnsafeMutablePointer<Int>
    private let lengths: UnsafeMutablePointer<Int>
    /// The secrets starting with byte `b` are `groupStart[b]..<groupStart[b + 1]`.
    private let groupStart: UnsafeMutablePointer<Int>
    /// 1 for bytes some secret starts with.
    private let isFirstByte: UnsafeMutablePointer<UInt8>
    private let secretCount: Int
    /// The longest secret's length.
    let longest: Int

    /// nil when there is nothing to mask (no values, or all empty).
    package init?(values: [String]) {
        var distinct = Set<[UInt8]>()
        for value in values where !value.isEmpty {
            distinct.insert(Array(value.utf8))
            // As other programs print it: JSON-escaped, URL-encoded, base64.
            distinct.formUnion(SecretEncodings.forms(of: value))
            // Line by line too, without the line breaks' `\r`.
            guard value.utf8.contains(UInt8(ascii: "\n")) else { continue }
            for line in value.utf8.split(separator: UInt8(ascii: "\n")) {
                let trimmed = line.last == UInt8(ascii: "\r") ? line.dropLast() : line[...]
                if trimmed.count >= Self.minimumLength { distinct.insert(Array(trimmed)) }
            }
        }
        guard !distinct.isEmpty else { return nil }
        let sorted = distinct.sorted { first, second in
            if first[0] != second[0] { return first[0] < second[0] }
            return first.count != second.count ? first.count > second.count : first.lexicographicallyPrecedes(second)
        }
        let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: sorted.reduce(0) { $0 + $1.count })
        let offsets = UnsafeMutablePointer<Int>.allocate(capacity: sorted.count)
        let lengths = UnsafeMutablePointer<Int>.allocate(capacity: sorted.count)
        let groupStart = UnsafeMutablePointer<Int>.allocate(capacity: 257)
        let isFirstByte = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        isFirstByte.initialize(repeating: 0, count: 256)
        var counts = [Int](repeating: 0, count: 256)
        var offset = 0
        for (index, secret) in sorted.enumerated() {
            secret.withUnsafeBufferPointer { (storage + offset).initialize(from: $0.baseAddress!, count: secret.count) }
            offsets[index] = offset
            lengths[index] = secret.count
            counts[Int(secret[0])] += 1
            isFirstByte[Int(secret[0])] = 1
            offset += secret.count
        }
        var running = 0
        for byte in 0..<256 {
            groupStart[byte] = running
            running += counts[byte]
        }
        groupStart[256] = running
        self.storage = storage
        self.offsets = offsets
        self.lengths = lengths
        self.groupStart = groupStart
        self.isFirstByte = isFirstByte
        secretCount = sorted.count
        longest = sorted.map(\.count).max()!
    }

    deinit {
        storage.deallocate()
        offsets.deallocate()
        lengths.deallocate()
        groupStart.deallocate()
        isFirstByte.deallocate()
    }

    // MARK: - Whole texts

    /// `text` with every secret replaced.
    package func mask(_ text: String) -> String {
        var text = text
        return text.withUTF8 { utf8 in
            let raw = UnsafeRawBufferPointer(utf8)
            guard containsCandidate(raw) else { return nil }
            var result: [UInt8] = []
            result.reserveCapacity(utf8.count)
            _ = scan(raw, final: true, alreadyMasked: 0) { result.append(contentsOf: $0) }
            return String(decoding: result, as: UTF8.self)
        } ?? text
    }

    /// Each of `texts` masked.
    package func mask(_ texts: [String]) -> [String] { texts.map(mask) }

    /// JSON text with every secret replaced inside its strings: each string
    /// is decoded, masked and written again, so a secret is found however
    /// the writer escaped it (`\n`, `\"`, `\u00e9`, `\/`), and numbers,
    /// keys' quotes and the structure are never touched.
    package func maskJSON(_ json: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        var copiedUpTo = 0
        var position = 0
        let count = json.count
        while position < count {
            guard json[position] == UInt8(ascii: "\"") else {
                position += 1
                continue
            }
            // A string literal: find its closing quote.
            var end = position + 1
            var escaped = false
            while end < count {
                let byte = json[end]
                if byte == UInt8(ascii: "\\") { escaped = true; end += 2; continue }
                if byte == UInt8(ascii: "\"") { break }
                end += 1
            }
            guard end < count else { break }
            let content = json[(position + 1)..<end]
            let decoded = escaped ? JSONStringDecoding.decode(content) : String(decoding: content, as: UTF8.self)
            let masked = mask(decoded)
            if masked != decoded {
                if result.isEmpty { result.reserveCapacity(count) }
                result.append(contentsOf: json[copiedUpTo..<position])
                JSONValue.appendQuoted(masked, to: &result)
                copiedUpTo = end + 1
            }
            position = end + 1
        }
        guard copiedUpTo > 0 else { return json }
        result.append(contentsOf: json[copiedUpTo...])
        return result
    }

    /// `maskJSON` on text.
    package func maskJSON(_ json: String) -> String {
        String(decoding: maskJSON(Array(json.utf8)), as: UTF8.self)
    }

    /// A masker for one stream of output (a task's stdout, say).
    package func stream() -> SecretMaskingStream { SecretMaskingStream(masker: self) }

    // MARK: - Matching

    /// Whether any secret occurs in `bytes`: the fast way out for text with none.
    private func containsCandidate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        for index in 0..<secretCount where flowrun_memmem(base, bytes.count, storage + offsets[index], lengths[index]) != nil {
            return true
        }
        return false
    }

    /// Masks `buffer`, handing the result to `emit` in pieces. The first
    /// `alreadyMasked` bytes are the rest of a secret whose `***` was already
    /// emitted. Unless `final`, stops where a secret may begin but the
    /// buffer ends first, and returns that position with how many bytes from
    /// there on are already masked: the caller keeps those bytes (fewer than
    /// `longest`) and scans them again with what comes next.
    ///
    /// Each secret is searched for with memmem, its next occurrence kept
    /// until passed; stretches where occurrences overlap become one `***`.
    func scan(_ buffer: UnsafeRawBufferPointer, final: Bool, alreadyMasked: Int,
              emit: (UnsafeRawBufferPointer) -> Void) -> (held: Int, alreadyMasked: Int) {
        let count = buffer.count
        guard let base = buffer.baseAddress, count > 0 else { return (count, 0) }
        // Occurrences from here on wait for the next chunk.
        let holdFrom = final ? count : firstCutSecret(in: base, count: count)
        var emittedUpTo = alreadyMasked  // bytes before this are emitted (as text or inside a `***`)
        var coverEnd = alreadyMasked     // the current masked stretch ends here
        var coverIsOpen = alreadyMasked > 0
        var next = [Int](repeating: -1, count: secretCount)
        var position = 0
        while true {
            // The nearest occurrence at or after `position`; at one position, the longest.
            var nearest = Int.max
            var matched = 0
            for index in 0..<secretCount {
                if next[index] < position {
                    let found = flowrun_memmem(base + position, count - position, storage + offsets[index], lengths[index])
                    let at = found.map { base.distance(to: $0) } ?? Int.max
                    next[index] = at < holdFrom ? at : Int.max
                }
                if next[index] < nearest {
                    nearest = next[index]
                    matched = lengths[index]
                } else if next[index] == nearest && nearest != Int.max {
                    matched = max(matched, lengths[index])
                }
            }
            position = min(nearest, holdFrom)
            if coverIsOpen && position >= coverEnd {
                coverIsOpen = false
                emittedUpTo = coverEnd
            }
            guard position < holdFrom else { break }
            if coverIsOpen {
                coverEnd = max(coverEnd, position + matched)
            } else {
                if emittedUpTo < position { emit(UnsafeRawBufferPointer(rebasing: buffer[emittedUpTo..<position])) }
                Self.emitReplacement(emit)
                coverIsOpen = true
                coverEnd = position + matched
            }
            position += 1
        }
        if coverIsOpen { return (holdFrom, coverEnd - holdFrom) }  // the stretch runs into what is held
        if emittedUpTo < holdFrom { emit(UnsafeRawBufferPointer(rebasing: buffer[emittedUpTo..<holdFrom])) }
        return (holdFrom, 0)
    }

    private static func emitReplacement(_ emit: (UnsafeRawBufferPointer) -> Void) {
        withUnsafeBytes(of: (UInt8(ascii: "*"), UInt8(ascii: "*"), UInt8(ascii: "*"))) { emit($0) }
    }

    /// The first position in the last `longest - 1` bytes from which the
    /// beginning of a secret runs to the end of the buffer, or `count`.
    private func firstCutSecret(in base: UnsafeRawPointer, count: Int) -> Int {
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        for position in max(0, count - (longest - 1))..<count where isFirstByte[Int(bytes[position])] != 0 {
            let available = count - position
            let first = Int(bytes[position])
            for index in groupStart[first]..<groupStart[first + 1] where lengths[index] > available {
                if memcmp(base + position, storage + offsets[index], available) == 0 { return position }
            }
        }
        return count
    }
}

/// Masks one stream of output as it arrives in chunks. A secret may be cut
/// by a chunk boundary (a task printing half of it, pausing, then the rest),
/// so the last bytes of a chunk that could begin a secret (fewer than the
/// longest secret) are held back until the next chunk or the stream's end.
/// Only bytes that may start a secret wait; any other output passes at once.
///
/// Not thread-safe: one reader (the pump's thread, the HTTP thread) owns it.
package final class SecretMaskingStream: @unchecked Sendable {
    // @unchecked: used by one thread at a time, handed over with the stream's end.
    let masker: SecretMasker
    private var held: [UInt8] = []
    private var heldAlreadyMasked = 0

    init(masker: SecretMasker) {
        self.masker = masker
    }

    /// Masks `chunk` (after what was held back), handing the result to `emit` in pieces.
    package func write(_ chunk: UnsafeRawBufferPointer, to emit: (UnsafeRawBufferPointer) -> Void) {
        guard !chunk.isEmpty else { return }
        if held.isEmpty {
            let (start, masked) = masker.scan(chunk, final: false, alreadyMasked: 0, emit: emit)
            if start < chunk.count { held.append(contentsOf: chunk[start...]) }
            heldAlreadyMasked = masked
            return
        }
        held.append(contentsOf: chunk)
        let buffer = held
        held.removeAll(keepingCapacity: true)
        buffer.withUnsafeBytes { bytes in
            let (start, masked) = masker.scan(bytes, final: false, alreadyMasked: heldAlreadyMasked, emit: emit)
            if start < bytes.count { held.append(contentsOf: bytes[start...]) }
            heldAlreadyMasked = masked
        }
    }

    /// The stream has ended: what was held back, masked.
    package func finish(to emit: (UnsafeRawBufferPointer) -> Void) {
        guard !held.isEmpty else { return }
        let buffer = held
        held.removeAll()
        buffer.withUnsafeBytes { _ = masker.scan($0, final: true, alreadyMasked: heldAlreadyMasked, emit: emit) }
        heldAlreadyMasked = 0
    }
}

/// The text of a JSON string's content (between the quotes), escapes undone.
enum JSONStringDecoding {
    static func decode(_ content: ArraySlice<UInt8>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(content.count)
        var index = content.startIndex
        var pendingHighSurrogate: UInt32?
        while index < content.endIndex {
            let byte = content[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < content.endIndex else {
                bytes.append(byte)
                index += 1
                continue
            }
            let escape = content[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "f"): bytes.append(0x0C)
            case UInt8(ascii: "u"):
                guard index + 4 <= content.endIndex,
                      let unit = UInt32(String(decoding: content[index..<(index + 4)], as: UTF8.self), radix: 16) else { continue }
                index += 4
                if (0xD800..<0xDC00).contains(unit) {
                    pendingHighSurrogate = unit
                    continue
                }
                var scalarValue = unit
                if (0xDC00..<0xE000).contains(unit), let high = pendingHighSurrogate {
                    scalarValue = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)
                }
                pendingHighSurrogate = nil
                if let scalar = Unicode.Scalar(scalarValue) { bytes.append(contentsOf: String(scalar).utf8) }
            default: bytes.append(escape)  // `"`, `\`, `/`
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
