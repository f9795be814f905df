#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues

/// The elements of a JSON array in a file, one at a time: each element's
/// bytes are cut out by a small scanner (brackets, braces and strings) and
/// parsed alone, so an array of a million elements never sits in memory
/// (memory: one 64 KiB chunk and the element being read).
final class FanOutJSONElements {
    /// The text is not one JSON array (then its lines are the items).
    struct NotAnArray: Error {}

    private var descriptor: Int32
    private let path: String
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    private var sawFirst = false
    private var finished = false

    init(contentsOf path: String) throws(FanOutFileError) {
        self.path = path
        descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw FanOutFileError(path: path, errno: errno) }
        buffer.reserveCapacity(1 << 16)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    enum Failure: Error {
        case read(FanOutFileError)
        case notAnArray
    }

    /// The next element as an item, nil after the last.
    func next() throws(Failure) -> FanOutItem? {
        guard !finished else { return nil }
        guard let first = try skipBlanks() else { throw .notAnArray }
        if !sawFirst {
            guard first == UInt8(ascii: "[") else { throw .notAnArray }
            start += 1
            sawFirst = true
            guard let next = try skipBlanks() else { throw .notAnArray }
            if next == UInt8(ascii: "]") { return try end() }
        } else if first == UInt8(ascii: "]") {
            return try end()
        } else {
            guard first == UInt8(ascii: ",") else { throw .notAnArray }
            start += 1
            guard try skipBlanks() != nil else { throw .notAnArray }
        }
        // Cut one value: to the comma or bracket that closes it at depth 0.
        var position = start
        var depth = 0
        var inString = false
        var escaped = false
        while true {
            if position == buffer.count {
                guard !atEnd else { throw .notAnArray }
                let offset = position - start
                try readMore()
                position = start + offset
                continue
            }
            let byte = buffer[position]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") {
                depth += 1
            } else if byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") {
                if depth == 0 { break }
                depth -= 1
            } else if byte == UInt8(ascii: ","), depth == 0 {
                break
            }
            position += 1
        }
        guard let value = JSONValue.parse(bytes: Array(buffer[start..<position])) else { throw .notAnArray }
        start = position
        return FanOutItem(value)
    }

    /// After the closing bracket only blanks may follow.
    private func end() throws(Failure) -> FanOutItem? {
        start += 1
        if try skipBlanks() != nil { throw .notAnArray }
        finished = true
        return nil
    }

    /// The next byte that is not a blank, reading as needed (nil at the end).
    private func skipBlanks() throws(Failure) -> UInt8? {
        while true {
            while start < buffer.count, ExpressionValue.isSpace(buffer[start]) { start += 1 }
            if start < buffer.count { return buffer[start] }
            if atEnd { return nil }
            try readMore()
        }
    }

    private func readMore() throws(Failure) {
        if start > 0 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        let chunk = 1 << 16
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + old, chunk) }
            if count < 0 {
                if errno == EINTR { continue }
                let reason = errno
                buffer.removeSubrange(old...)
                atEnd = true
                throw .read(FanOutFileError(path: path, errno: reason))
            }
            buffer.removeSubrange((old + count)...)
            if count == 0 {
                atEnd = true
                close(descriptor)
                descriptor = -1
            }
            return
        }
    }
}
