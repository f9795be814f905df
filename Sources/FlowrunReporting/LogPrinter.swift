#if canImport(Glibc)
import Glibc
#endif
import FlowrunRecord
import FlowrunValues
/// Where `flowrun logs` puts a log's bytes: as they are into a pipe or a
/// file (`flowrun logs build > build.log` is the log), and on a terminal
/// line by line with control characters escaped, as `--stream` shows them
/// (and no line starting with `::`, a CI runner's command),
/// so what a task printed cannot steer the terminal.
package final class LogPrinter {
    private let escapes: Bool
    /// Written in full, waiting for the reader (unlike the run's console,
    /// which drops lines rather than stall the run: here nothing runs).
    private let descriptor: Int32
    /// Bytes after the last line break, held until the line is whole (escaping only).
    private var partial: [UInt8] = []
    /// The errno of the first write that failed (`logs > /dev/full`): the
    /// command fails with it; nothing more is written.
    package private(set) var failure: Int32?

    package init(escapes: Bool, descriptor: Int32 = 1) {
        self.escapes = escapes
        self.descriptor = descriptor
    }

    package func print(_ bytes: [UInt8]) {
        guard failure == nil else { return }
        guard escapes else {
            if !bytes.withUnsafeBytes({ writeAll(descriptor, $0) }) { failure = errno }
            return
        }
        partial += bytes
        guard let last = partial.lastIndex(of: UInt8(ascii: "\n")) else { return }
        var text = ""
        for line in partial[...last].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast() {
            text += TerminalText.escapedLine(String(decoding: line, as: UTF8.self))
            text += "\n"
        }
        partial.removeFirst(last + 1)
        if !writeAll(descriptor, text) { failure = errno }
    }

    /// Writes a last line that has no line break.
    package func finish() {
        if escapes, !partial.isEmpty, failure == nil {
            if !writeAll(descriptor, TerminalText.escapedLine(String(decoding: partial, as: UTF8.self)) + "\n") { failure = errno }
            partial.removeAll()
        }
    }
}
