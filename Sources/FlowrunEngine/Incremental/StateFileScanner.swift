#if canImport(Glibc)
import Glibc
#endif

/// Reads a `.flowrun/state` file written by `IncrementalRecord.json(task:)`
/// straight from its bytes, in one pass: no `JSONValue` tree, no
/// dictionary of fields, each stamp parsed in place. A 70-task no-op run
/// reads 70 files of ~91 entries; the general reader built 6,370 small
/// trees and converted them, a fifth of the run.
///
/// It takes only the writer's own shape: the keys in its order, no spaces,
/// strings with no escape but the writer's two-character ones (`\n`, `\"`,
/// …), valid UTF-8, numbers as the writer writes them.
/// Anything else (a file from another writer, a `\u` escape, a hostile
/// one) makes it give up (`nil`), and the caller reads the file with the
/// general JSON reader, which decides as it always did: this is a shortcut
/// to the same record, never a second idea of what a state file may hold.
struct StateFileScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The record, or nil when the bytes are not exactly the writer's shape for `task`.
    mutating func record(task: String) -> IncrementalRecord? {
        var pool = StateEntryPool()
        return record(task: task, pool: &pool)
    }

    /// The same, each source and generated file's entry found in `pool`
    /// when this store read its very bytes before (and kept there if new).
    mutating func record(task: String, pool: inout StateEntryPool) -> IncrementalRecord? {
        guard skip("{\"version\":1,\"task\":"), let name = stringRange(), matches(name, task),
              skip(",\"identity\":"), let identity = string(),
              skip(",\"sources\":"), let sources = pathHashes(pool: &pool),
              skip(",\"generates\":"), let generates = pathHashes(pool: &pool),
              skip(",\"stdout\":"), let stdout = string(),
              skip(",\"exit_code\":"), let exitCode = exitCode(),
              skip(",\"outputs\":"), let outputs = pairs(),
              skip("}")
        else { return nil }
        // The writer ends the file with a newline; nothing may follow it.
        if index < bytes.count && bytes[index] == UInt8(ascii: "\n") { index += 1 }
        guard index == bytes.count else { return nil }
        return IncrementalRecord(identity: identity, sources: sources, generates: generates, stdout: stdout, exitCode: exitCode, outputs: outputs)
    }

    private mutating func skip(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count,
              literal.withUTF8Buffer({ memcmp(bytes.baseAddress! + index, $0.baseAddress!, count) == 0 })
        else { return false }
        index += count
        return true
    }

    private mutating func skip(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private func matches(_ range: Range<Int>, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            utf8.count == range.count && (range.isEmpty || memcmp(bytes.baseAddress! + range.lowerBound, utf8.baseAddress!, range.count) == 0)
        }
    }

    /// The bytes between the quotes of a string at `index`; nil for a
    /// string that needs the general reader (an escape, a raw control
    /// character, which JSON forbids, or no closing quote).
    private mutating func stringRange() -> Range<Int>? {
        guard skip(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return start..<index - 1
            }
            guard byte >= 0x20, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    /// A string, when its bytes are valid UTF-8 (else the general reader repairs them).
    private mutating func string() -> String? {
        let start = index
        guard let range = stringRange() else {
            index = start
            return escapedString()
        }
        let slice = UnsafeBufferPointer(rebasing: bytes[range])
        return String(validating: slice, as: UTF8.self)
    }

    /// A string with the escapes the writer makes of a task's stdout
    /// (`\n`, `\t`, `\"`, …) decoded: a fan-out's list task keeps lines,
    /// and its file went to the general reader, 230,000 instructions for
    /// 700 bytes. `\u` and anything else that is not the writer's
    /// two-character escapes is nil (the general reader decides).
    private mutating func escapedString() -> String? {
        guard skip(UInt8(ascii: "\"")) else { return nil }
        var decoded: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\"") { return String(validating: decoded, as: UTF8.self) }
            guard byte >= 0x20 else { return nil }
            guard byte == UInt8(ascii: "\\") else {
                decoded.append(byte)
                continue
            }
            guard index < bytes.count else { return nil }
            let escaped = bytes[index]
            index += 1
            switch escaped {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escaped)
            case UInt8(ascii: "n"): decoded.append(0x0A)
            case UInt8(ascii: "r"): decoded.append(0x0D)
            case UInt8(ascii: "t"): decoded.append(0x09)
            case UInt8(ascii: "b"): decoded.append(0x08)
            case UInt8(ascii: "f"): decoded.append(0x0C)
            default: return nil
            }
        }
        return nil
    }

    /// `[[path, hash], [path, hash, stamp], …]`; a stamp that does not read is none.
    private mutating func pathHashes(pool: inout StateEntryPool) -> [IncrementalRecord.PathHash]? {
        guard skip(UInt8(ascii: "[")) else { return nil }
        var result: [IncrementalRecord.PathHash] = []
        if skip(UInt8(ascii: "]")) { return result }
        repeat {
            let start = index
            // Bytes read before as an entry are that entry (they were checked then).
            if let end = entryEnd(), let known = pool.entry(UnsafeBufferPointer(rebasing: bytes[start..<end])) {
                index = end
                result.append(known)
                continue
            }
            guard skip(UInt8(ascii: "[")), let path = string(), skip(UInt8(ascii: ",")), let hash = string() else { return nil }
            var stamp: FileStamp?
            if skip(UInt8(ascii: ",")) {
                // Read in place (a byte that is not ASCII is no digit: none, as the general reader finds).
                guard let range = stringRange() else { return nil }
                stamp = FileStamp(utf8: UnsafeBufferPointer(rebasing: bytes[range]))
            }
            guard skip(UInt8(ascii: "]")) else { return nil }
            let entry = IncrementalRecord.PathHash(path: path, hash: hash, stamp: stamp)
            // Only bytes without an escape: `entryEnd` finds an entry by its quotes alone.
            let entryBytes = UnsafeBufferPointer(rebasing: bytes[start..<index])
            if memchr(entryBytes.baseAddress!, Int32(UInt8(ascii: "\\")), entryBytes.count) == nil {
                pool.keep(entry, readFrom: entryBytes)
            }
            result.append(entry)
        } while skip(UInt8(ascii: ","))
        return skip(UInt8(ascii: "]")) ? result : nil
    }

    /// Where the entry at `index` would end if it is `["…","…"]` or
    /// `["…","…","…"]`, found by its quotes alone (`memchr`): only a key to
    /// look the bytes up by. An escaped quote would cut it short, but then
    /// the bytes are no entry read before (none of those has a backslash).
    private func entryEnd() -> Int? {
        var at = index
        guard at < bytes.count, bytes[at] == UInt8(ascii: "[") else { return nil }
        at += 1
        for field in 0..<3 {
            guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\""),
                  let close = memchr(bytes.baseAddress! + at + 1, Int32(UInt8(ascii: "\"")), bytes.count - at - 1)
            else { return nil }
            at = UnsafePointer<UInt8>(close.assumingMemoryBound(to: UInt8.self)) - bytes.baseAddress! + 1
            guard at < bytes.count else { return nil }
            if bytes[at] == UInt8(ascii: "]") { return field >= 1 ? at + 1 : nil }
            guard bytes[at] == UInt8(ascii: ",") else { return nil }
            at += 1
        }
        return nil
    }

    /// `[[key, value], …]`.
    private mutating func pairs() -> [IncrementalRecord.KeyValue]? {
        guard skip(UInt8(ascii: "[")) else { return nil }
        var result: [IncrementalRecord.KeyValue] = []
        if skip(UInt8(ascii: "]")) { return result }
        repeat {
            guard skip(UInt8(ascii: "[")), let key = string(), skip(UInt8(ascii: ",")), let value = string(), skip(UInt8(ascii: "]")) else { return nil }
            result.append(IncrementalRecord.KeyValue(key: key, value: value))
        } while skip(UInt8(ascii: ","))
        return skip(UInt8(ascii: "]")) ? result : nil
    }

    /// `null`, or an integer as the writer writes one (`-?(0|[1-9][0-9]*)`,
    /// at most 18 digits: it fits an `Int`); `.none` for anything else.
    private mutating func exitCode() -> Int?? {
        if skip("null") { return .some(nil) }
        let negative = skip(UInt8(ascii: "-"))
        let start = index
        var value = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9"), index - start < 18 {
            value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        let digits = index - start
        guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        return .some(negative ? -value : value)
    }
}
