#if canImport(Glibc)
import Glibc
#endif
package import FlowrunModel
import FlowrunValues

/// Turns a computed `foreach:` value into the fan-out's items (SPEC §4).
///
/// - If the whole text (surrounding whitespace aside) is a JSON array, each
///   element is an item: a string element is its text, any other element
///   its compact JSON (`1.50`, `true`, `null`, `{"a":[1,2]}` — numbers as
///   written, object members in order). `[]` is no items: an empty fan-out.
/// - Otherwise (including JSON that is not an array, or is malformed), each
///   line is an item: lines split at `\n`, one trailing `\r` dropped, blank
///   lines (empty or only spaces and tabs) skipped, other lines kept exactly,
///   inner and edge spaces included.
package enum FanOutItems {
    package static func parse(_ text: String) -> [String] {
        items(text).map(\.text)
    }

    /// The items, a JSON array's objects as records (`item.KEY`).
    package static func items(_ text: String) -> [FanOutItem] {
        FanOutText.items(text)
    }

    /// The items of a file holding a whole stdout (`StdoutSpill`), by the same
    /// rules, however long it is: a JSON array is read whole, lines are read
    /// in chunks (memory: the items, plus one chunk and one unfinished line).
    package static func parse(contentsOf path: String) throws(FanOutFileError) -> [String] {
        try items(contentsOf: path).map(\.text)
    }

    /// `items(_:)` for a file holding a whole stdout.
    package static func items(contentsOf path: String) throws(FanOutFileError) -> [FanOutItem] {
        var items: [FanOutItem] = []
        var line: [UInt8] = []
        var everything: [UInt8]? = nil  // kept only while the text may be a JSON array
        var sawContent = false
        try readChunks(of: path) { bytes in
            if !sawContent, let first = bytes.first(where: { !ExpressionValue.isSpace($0) }) {
                sawContent = true
                if first == UInt8(ascii: "[") { everything = [] }
            }
            if everything != nil { everything! += bytes }
            var start = bytes.startIndex
            while let newline = bytes[start...].firstIndex(of: 0x0A) {
                line += bytes[start..<newline]
                if let item = item(line[...]) { items.append(.text(item)) }
                line.removeAll(keepingCapacity: true)
                start = newline + 1
            }
            line += bytes[start...]
        }
        if let item = item(line[...]) { items.append(.text(item)) }
        if let everything, case .array(let elements)? = JSONValue.parse(String(decoding: everything, as: UTF8.self)) {
            return elements.map(FanOutItem.init)
        }
        return items
    }

    /// A whole file as text (a stdout kept on disk, for `split:`).
    package static func wholeText(contentsOf path: String) throws(FanOutFileError) -> String {
        var bytes: [UInt8] = []
        try readChunks(of: path) { bytes += $0 }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Hands `body` the file at `path` (never through a link) 64 KiB at a time.
    private static func readChunks(of path: String, _ body: (ArraySlice<UInt8>) -> Void) throws(FanOutFileError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw FanOutFileError(path: path, errno: errno) }
        defer { close(descriptor) }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FanOutFileError(path: path, errno: errno)
            }
            if count == 0 { return }
            body(chunk[..<count])
        }
    }

    /// A line as an item: one trailing `\r` dropped, nil when blank.
    private static func item(_ line: ArraySlice<UInt8>) -> String? {
        var line = line
        if line.last == 0x0D { line = line.dropLast() }
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return nil }
        return String(decoding: line, as: UTF8.self)
    }
}

/// The file with a whole stdout could not be read.
package struct FanOutFileError: Error, Sendable {
    package var path: String
    package var errno: Int32

    package var message: String { "cannot read \(path): \(String(cString: strerror(errno)))" }
}
