/// Reads a `$FLOWRUN_OUTPUT` file the way GitHub Actions reads `$GITHUB_OUTPUT`, but unforgeably.
///
/// - `KEY=VALUE`: the value is the rest of the line (it may hold `=`).
/// - `KEY<<DELIMITER`, value lines, then a line that is exactly `DELIMITER`:
///   the value is the lines in between joined with `\n` (no final newline).
///   Whichever of `=` and `<<` comes first on the line decides the form.
/// - Keys match `[A-Za-z_][A-Za-z0-9_-]*`; a line with another key is a
///   problem and sets nothing (a heredoc with a bad key still consumes its
///   body, so the body cannot be read as keys).
/// - A later write of a key replaces the earlier value.
/// - Lines end with `\n`; one `\r` before it is dropped (CRLF files), also
///   before matching a delimiter. A last line without `\n` counts. Blank lines
///   are skipped.
/// - A value cannot set another key: a `KEY=VALUE` value is one line, and a
///   heredoc value ends only at its exact delimiter line. A heredoc that is
///   never closed (or has an empty delimiter) is a problem: its key is not set
///   and the rest of the file is ignored — reading the body as `KEY=VALUE`
///   lines is exactly the forgery this prevents — and the problem says so.
/// - Values are UTF-8; invalid bytes become U+FFFD, with a problem.
/// - At most `sizeLimit` bytes (1 MiB) are read: the complete lines within
///   it count, the rest is ignored, with a problem naming the first ignored
///   line. At most `problemLimit` problems are listed, then a count.
package enum OutputFileParser {
    package static let sizeLimit = 1 << 20
    package static let problemLimit = 100

    /// Parses the file's bytes. The engine needs to read at most
    /// `limit + 1` bytes and pass the file's real size as `fileSize`, so the
    /// message can say how large it was.
    package static func parse(_ bytes: [UInt8], fileSize: Int? = nil, limit: Int = sizeLimit) -> OutputFile {
        var parser = Parser(bytes: bytes, limit: limit, fileSize: fileSize ?? bytes.count)
        parser.run()
        return parser.result
    }

    private struct Parser {
        let bytes: [UInt8]
        let limit: Int
        let fileSize: Int
        var result = OutputFile()
        var omittedProblems = 0
        /// Start of the next unread line, and its 1-based number.
        var position = 0
        var lineNumber = 0
        /// Bytes past this are not read (the size cap).
        var end = 0

        init(bytes: [UInt8], limit: Int, fileSize: Int) {
            self.bytes = bytes
            self.limit = limit
            self.fileSize = max(fileSize, bytes.count)
        }

        mutating func run() {
            let oversized = fileSize > limit
            if oversized {
                // Only whole lines inside the cap: a cut line would set a cut value.
                let cut = min(limit, bytes.count)
                end = bytes[..<cut].lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
            } else {
                end = bytes.count
            }
            readLines()
            if omittedProblems > 0 {
                result.problems.append(.init(line: nil, message: "… and \(omittedProblems) more problem\(omittedProblems == 1 ? "" : "s")"))
            }
            if oversized {
                let firstIgnoredLine = bytes[..<end].reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
                result.problems.append(.init(
                    line: firstIgnoredLine,
                    message: "the file is larger than \(Self.size(limit)) (\(fileSize) bytes); this line and everything after it were ignored"))
            }
        }

        private mutating func readLines() {
            while let line = nextLine() {
                if line.isEmpty { continue }
                let equals = line.firstIndex(of: 0x3D)
                let heredoc = Self.firstHeredocMark(in: line)
                if let equals, heredoc.map({ equals < $0 }) ?? true {
                    let key = line[..<equals]
                    guard isValidKey(key) else { continue }
                    result.set(String(decoding: key, as: UTF8.self), value(line[(equals + 1)...], of: key, startingAt: lineNumber))
                } else if let heredoc {
                    guard readHeredoc(line, key: line[..<heredoc], delimiter: line[(heredoc + 2)...]) else { return }
                } else {
                    report("expected KEY=VALUE or KEY<<DELIMITER, found \(Self.shown(line))")
                }
            }
        }

        /// Reads a heredoc's body; false when the rest of the file must be ignored.
        private mutating func readHeredoc(_ header: ArraySlice<UInt8>, key: ArraySlice<UInt8>, delimiter: ArraySlice<UInt8>) -> Bool {
            let startLine = lineNumber
            let keyIsValid = isValidKey(key)
            guard !delimiter.isEmpty else {
                report("\(Self.shown(header)) has no delimiter after '<<'; the rest of the file was ignored")
                return false
            }
            var body: [ArraySlice<UInt8>] = []
            while let line = nextLine() {
                if line.elementsEqual(delimiter) {
                    if keyIsValid {
                        let joined = Array(body.joined(separator: [0x0A]))
                        result.set(String(decoding: key, as: UTF8.self), value(joined[...], of: key, startingAt: startLine))
                    }
                    return true
                }
                body.append(line)
            }
            let what = keyIsValid ? "\(Self.shown(key)) is not set" : "nothing was set"
            let ignored = switch body.count {
            case 0: ""
            case 1: " and the line after it was ignored"
            default: " and the \(body.count) lines after it were ignored"
            }
            report("\(Self.shown(header)) is never closed by a line \(Self.shown(delimiter)); \(what)\(ignored)", line: startLine)
            return false
        }

        /// The next line without its `\n` and one trailing `\r`; nil at the end.
        private mutating func nextLine() -> ArraySlice<UInt8>? {
            guard position < end else { return nil }
            lineNumber += 1
            let newline = bytes[position..<end].firstIndex(of: 0x0A) ?? end
            var line = bytes[position..<newline]
            position = min(newline + 1, end)
            if line.last == 0x0D { line = line.dropLast() }
            return line
        }

        private mutating func value(_ bytes: ArraySlice<UInt8>, of key: ArraySlice<UInt8>, startingAt line: Int) -> String {
            if let text = String(validating: bytes, as: UTF8.self) { return text }
            report("the value of \(Self.shown(key)) is not valid UTF-8; invalid bytes were replaced with U+FFFD", line: line)
            return String(decoding: bytes, as: UTF8.self)
        }

        /// `[A-Za-z_][A-Za-z0-9_-]*`, else a problem.
        private mutating func isValidKey(_ key: ArraySlice<UInt8>) -> Bool {
            func isLetter(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte | 0x20) || byte == 0x5F }
            func isKeyByte(_ byte: UInt8) -> Bool { isLetter(byte) || (0x30...0x39).contains(byte) || byte == 0x2D }
            if let first = key.first, isLetter(first), key.allSatisfy(isKeyByte) { return true }
            report(key.isEmpty ? "a line starts with no key" : "\(Self.shown(key)) is not a valid key: use letters, digits, '_' and '-', not starting with a digit or '-'")
            return false
        }

        private mutating func report(_ message: String, line: Int? = nil) {
            guard result.problems.count < problemLimit else {
                omittedProblems += 1
                return
            }
            result.problems.append(.init(line: line ?? lineNumber, message: message))
        }

        private static func firstHeredocMark(in line: ArraySlice<UInt8>) -> Int? {
            var index = line.startIndex
            while index + 1 < line.endIndex {
                if line[index] == 0x3C, line[index + 1] == 0x3C { return index }
                index += 1
            }
            return nil
        }

        /// File text for a message: at most 40 characters, control characters
        /// shown as `?` so a file cannot drive the user's terminal.
        static func shown(_ bytes: ArraySlice<UInt8>) -> String {
            var text = ""
            for (count, scalar) in String(decoding: bytes, as: UTF8.self).unicodeScalars.enumerated() {
                if count == 40 {
                    text += "…"
                    break
                }
                text.unicodeScalars.append(scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) ? "?" : scalar)
            }
            return "'\(text)'"
        }

        static func size(_ bytes: Int) -> String {
            bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : bytes % 1024 == 0 ? "\(bytes >> 10) KiB" : "\(bytes) bytes"
        }
    }
}
