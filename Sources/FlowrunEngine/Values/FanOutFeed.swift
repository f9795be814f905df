#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues

/// A fan-out's items, handed out one at a time as members are made: a
/// range counts up, a list is read by position, and a task's stdout is read
/// line by line — from its file on disk when it was over 1 MiB — so a
/// million items never sit in memory at once. A stdout that is a JSON array
/// is parsed whole (its elements are the items), as are `split:` values.
struct FanOutFeed {
    enum Source {
        case items([FanOutItem])
        case texts([String])
        case range(Int, Int)
        case lines(FanOutLines)
        /// A JSON array in a file, element by element (`count`: from the pass that checked it).
        case json(FanOutJSONElements, count: Int)
    }

    private var source: Source
    /// Items handed out so far: the next item's index.
    private(set) var offset = 0
    /// Why the items stopped early (a read error of a stdout on disk), if they did.
    private(set) var failure: String?

    /// When targets named some members only: their items, ascending. The
    /// feed hands out those alone, jumping to each (a range or a list by
    /// position), so one member of a 10,000,000-item range is one step.
    private var selected: [Int]?
    private var nextSelected = 0

    init(_ source: Source, selecting selected: Set<Int>? = nil) {
        self.source = source
        self.selected = selected?.sorted()
    }

    /// The number of items when known without reading them all.
    var knownCount: Int? {
        if let selected { return selected.count }
        switch source {
        case .items(let items): return items.count
        case .texts(let texts): return texts.count
        case .range(let low, let high): return high >= low ? high - low + 1 : 0
        case .lines: return nil
        case .json(_, let count): return count
        }
    }

    /// The items when they sit in memory as a list (records, a JSON array).
    var inMemoryItems: [FanOutItem]? {
        if case .items(let items) = source { return items }
        return nil
    }

    /// Whether the items are records read one at a time (their fields are checked in a pass of their own).
    var isStreamedJSON: Bool {
        if case .json = source { return true }
        return false
    }

    /// Whether there are no items at all, without using any up.
    var isEmpty: Bool {
        if let count = knownCount { return count == 0 }
        guard case .lines(let lines) = source else { return false }
        return (try? lines.firstNonBlankByte()) == nil
    }

    /// The next item, or nil at the end.
    mutating func next() -> FanOutItem? {
        if let selected {
            guard nextSelected < selected.count else { return nil }
            let wanted = selected[nextSelected]
            nextSelected += 1
            switch source {
            case .items, .texts, .range:
                offset = max(offset, wanted)
            case .lines, .json:
                while offset < wanted, nextItem() != nil {}
            }
        }
        return nextItem()
    }

    private mutating func nextItem() -> FanOutItem? {
        let item: FanOutItem?
        switch source {
        case .items(let items): item = offset < items.count ? items[offset] : nil
        case .texts(let texts): item = offset < texts.count ? .text(texts[offset]) : nil
        case .range(let low, let high):
            let value = low.addingReportingOverflow(offset)
            item = !value.overflow && value.partialValue <= high ? .text(String(value.partialValue)) : nil
        case .lines(let lines):
            do throws(FanOutFileError) {
                item = try lines.next().map(FanOutItem.text)
            } catch {
                failure = error.message
                item = nil
            }
        case .json(let elements, _):
            do throws(FanOutJSONElements.Failure) {
                item = try elements.next()
            } catch {
                switch error {
                case .read(let problem): failure = problem.message
                case .notAnArray: failure = "the JSON array changed while it was read"
                }
                item = nil
            }
        }
        if item != nil { offset += 1 }
        return item
    }
}

/// The non-blank lines of a stdout, in memory or in its file, one at a
/// time (memory: one 64 KiB chunk and the unfinished line).
final class FanOutLines {
    private let input: FileChunks

    /// The lines of `text`.
    init(text: String) {
        input = FileChunks(text: text)
    }

    /// The lines of the file at `path` (never through a link).
    init(contentsOf path: String) throws(FanOutFileError) {
        input = try FileChunks(contentsOf: path)
    }

    /// The first byte that is not a blank, reading as far as needed (nil: only blanks).
    func firstNonBlankByte() throws(FanOutFileError) -> UInt8? {
        while true {
            if let byte = input.buffer[input.start...].first(where: { !ExpressionValue.isSpace($0) }) { return byte }
            if input.atEnd { return nil }
            try input.readMore()
        }
    }

    /// The next line that is not blank, one trailing `\r` dropped.
    func next() throws(FanOutFileError) -> String? {
        while true {
            if let newline = input.buffer[input.start...].firstIndex(of: 0x0A) {
                let line = input.buffer[input.start..<newline]
                input.start = newline + 1
                if let item = Self.item(line) { return item }
                continue
            }
            if input.atEnd {
                guard input.start < input.buffer.count else { return nil }
                let line = input.buffer[input.start...]
                input.start = input.buffer.count
                return Self.item(line)
            }
            try input.readMore()
        }
    }

    /// A line as an item: one trailing `\r` dropped, nil when blank (as `FanOutItems`).
    private static func item(_ line: ArraySlice<UInt8>) -> String? {
        var line = line
        if line.last == 0x0D { line = line.dropLast() }
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return nil }
        return String(decoding: line, as: UTF8.self)
    }
}
