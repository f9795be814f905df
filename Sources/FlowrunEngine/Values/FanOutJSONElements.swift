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

    private let input: FileChunks
    private var sawFirst = false
    private var finished = false

    init(contentsOf path: String) throws(FanOutFileError) {
        input = try FileChunks(contentsOf: path)
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
            input.start += 1
            sawFirst = true
            guard let next = try skipBlanks() else { throw .notAnArray }
            if next == UInt8(ascii: "]") { return try end() }
        } else if first == UInt8(ascii: "]") {
            return try end()
        } else {
            guard first == UInt8(ascii: ",") else { throw .notAnArray }
            input.start += 1
            guard try skipBlanks() != nil else { throw .notAnArray }
        }
        // Cut one value: to the comma or bracket that closes it at depth 0.
        var position = input.start
        var depth = 0
        var inString = false
        var escaped = false
        while true {
            if position == input.buffer.count {
                guard !input.atEnd else { throw .notAnArray }
                let offset = position - input.start
                try readMore()
                position = input.start + offset
                continue
            }
            let byte = input.buffer[position]
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
        guard let value = JSONValue.parse(bytes: Array(input.buffer[input.start..<position])) else { throw .notAnArray }
        input.start = position
        return FanOutItem(value)
    }

    /// After the closing bracket only blanks may follow.
    private func end() throws(Failure) -> FanOutItem? {
        input.start += 1
        if try skipBlanks() != nil { throw .notAnArray }
        finished = true
        return nil
    }

    /// The next byte that is not a blank, reading as needed (nil at the end).
    private func skipBlanks() throws(Failure) -> UInt8? {
        while true {
            while input.start < input.buffer.count, ExpressionValue.isSpace(input.buffer[input.start]) { input.start += 1 }
            if input.start < input.buffer.count { return input.buffer[input.start] }
            if input.atEnd { return nil }
            try readMore()
        }
    }

    private func readMore() throws(Failure) {
        do throws(FanOutFileError) { try input.readMore() } catch { throw .read(error) }
    }
}
