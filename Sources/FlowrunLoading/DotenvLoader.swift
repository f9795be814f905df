#if canImport(Glibc)
import Glibc
#endif
package import FlowrunModel

/// Reads the files of `dotenv:` (SPEC §15) as Docker Compose and just read
/// them: `KEY=VALUE` lines, blank lines and `#` comments skipped, an
/// `export ` prefix allowed; a value in single quotes is taken as written,
/// one in double quotes understands `\n`, `\t`, `\\`, `\"` and `\$`, and
/// either may span lines; an unquoted value is trimmed and ends at ` #`.
/// `$VAR` is not expanded. Later files win over earlier ones.
package enum DotenvLoader {
    package struct Loaded: Sendable {
        package var values: [(name: String, value: String)] = []
        package var diagnostics: [Diagnostic] = []
    }

    /// A file larger than this is refused: a `.env` is a few lines.
    static let maxBytes = 1 << 20

    package static func load(_ files: [DotenvFile], workflowFile: String) -> Loaded {
        var loaded = Loaded()
        var order: [String] = []
        var values: [String: String] = [:]
        let folder = workflowFile.contains("/") ? String(workflowFile[...workflowFile.lastIndex(of: "/")!]) : ""
        for file in files {
            let path = file.path.value.hasPrefix("/") ? file.path.value : folder + file.path.value
            guard let bytes = read(path) else {
                if file.required {
                    loaded.diagnostics.append(.error(
                        "dotenv file '\(file.path.value)' cannot be read (\(String(cString: strerror(errno)))); create it, or write {path: \(file.path.value), required: false} to skip it when missing",
                        at: file.path.location))
                }
                continue
            }
            let parsed = parse(String(decoding: bytes, as: UTF8.self), file: path)
            loaded.diagnostics += parsed.diagnostics
            for (name, value) in parsed.values {
                if values.updateValue(value, forKey: name) == nil { order.append(name) }
            }
        }
        loaded.values = order.map { ($0, values[$0]!) }
        return loaded
    }

    private static func read(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            errno = EISDIR
            return nil
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 { if errno == EINTR { continue } else { return nil } }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
            if bytes.count > maxBytes {
                errno = EFBIG
                return nil
            }
        }
    }

    /// The `KEY=VALUE` pairs of one file, in order, and its problems at their line and column.
    package static func parse(_ text: String, file: String) -> Loaded {
        var loaded = Loaded()
        // "\r\n" is one Character in Swift: a split at "\n" alone would keep Windows line ends.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        var index = 0
        while index < lines.count {
            let lineNumber = index + 1
            var line = lines[index][...]
            index += 1
            func problem(_ message: String, column: Int) {
                loaded.diagnostics.append(.error(message, at: SourceLocation(file: file, line: lineNumber, column: column)))
            }
            let indent = line.prefix { $0 == " " || $0 == "\t" }.count
            line = line.dropFirst(indent)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("export ") { line = line.dropFirst(7).drop { $0 == " " } }
            guard let equals = line.firstIndex(of: "=") else {
                problem("expected KEY=VALUE in a dotenv file, found '\(line)'", column: indent + 1)
                continue
            }
            let name = String(line[..<equals].trimmingSpaces)
            guard WorkflowDecoder.isEnvironmentName(name) else {
                problem("'\(name)' is not an environment variable name: use letters, digits and '_', not starting with a digit", column: indent + 1)
                continue
            }
            var rest = line[line.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
            guard let quote = rest.first, quote == "'" || quote == "\"" else {
                // Unquoted: up to a ` #` comment, trimmed.
                if let comment = rest.firstRange(of: " #") { rest = rest[..<comment.lowerBound] }
                loaded.values.append((name, String(rest.trimmingSpaces)))
                continue
            }
            // Quoted: up to the matching quote, across lines if need be.
            var value = ""
            var text = rest.dropFirst()
            var closed = false
            while !closed {
                var characters = text.makeIterator()
                while let character = characters.next() {
                    if character == quote { closed = true; break }
                    if quote == "\"", character == "\\", let next = characters.next() {
                        switch next {
                        case "n": value.append("\n")
                        case "t": value.append("\t")
                        case "r": value.append("\r")
                        case "\\", "\"", "$": value.append(next)
                        default: value += "\\" + String(next)
                        }
                        continue
                    }
                    value.append(character)
                }
                if closed { break }
                guard index < lines.count else {
                    problem("the value of \(name) opens a \(quote) quote that is never closed", column: indent + 1)
                    break
                }
                value.append("\n")
                text = lines[index][...]
                index += 1
            }
            if closed { loaded.values.append((name, value)) }
        }
        return loaded
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var trimmed = self
        while let first = trimmed.first, first == " " || first == "\t" { trimmed.removeFirst() }
        while let last = trimmed.last, last == " " || last == "\t" { trimmed.removeLast() }
        return trimmed
    }
}
