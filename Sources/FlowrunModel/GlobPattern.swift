/// A `sources:`/`generates:` glob: path segments split at `/`, each a
/// literal name, a wildcard (`*`, `?`, `[a-z]`, `[!x]`, `\` escapes) or
/// `**` (any number of folders, none included).
///
/// As in a POSIX shell, `*`, `?` and sets never match a name's leading `.`,
/// and `**` does not enter folders whose name starts with `.` (so `.git`
/// and `.flowrun` are never swept in); name them to include them.
/// Matching is on bytes.
package struct GlobPattern: Sendable, Equatable {
    package enum Segment: Sendable, Equatable {
        /// `**`.
        case anyFolders
        /// A name without wildcards (escapes resolved).
        case literal([UInt8])
        case wildcard([Token])
    }

    package enum Token: Sendable, Equatable {
        case byte(UInt8)
        /// `*`
        case anyRun
        /// `?`
        case anyOne
        /// `[...]`: byte ranges, negated with `!` or `^`.
        case set([ClosedRange<UInt8>], negated: Bool)
    }

    package var text: String
    package var isAbsolute: Bool
    package var segments: [Segment]

    /// What is wrong with a pattern, and at which UTF-8 offset of its text.
    package struct Problem: Error, Sendable, Equatable {
        package var message: String
        package var offset: Int
    }

    package static func parse(_ text: String) throws(Problem) -> GlobPattern {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw Problem(message: "a glob cannot be empty", offset: 0) }
        let isAbsolute = bytes.first == UInt8(ascii: "/")
        var segments: [Segment] = []
        segments.reserveCapacity(4)
        var start = isAbsolute ? 1 : 0
        while start <= bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != UInt8(ascii: "/") { end += 1 }
            let part = bytes[start..<end]
            // Compared a byte at a time: `elementsEqual` with a String's UTF-8 view was a fifth of a parse.
            if part.isEmpty || (part.count == 1 && part.first == UInt8(ascii: ".")) {
                // `a//b`, `./a`, a trailing `/`: nothing to match.
            } else if part.count == 2 && part.first == UInt8(ascii: "*") && part.last == UInt8(ascii: "*") {
                if segments.last != .anyFolders { segments.append(.anyFolders) }
            } else {
                segments.append(try segment(part, offset: start))
            }
            start = end + 1
        }
        guard !segments.isEmpty else { throw Problem(message: "the glob '\(text)' names no file", offset: 0) }
        return GlobPattern(text: text, isAbsolute: isAbsolute, segments: segments)
    }

    private static func segment(_ part: ArraySlice<UInt8>, offset: Int) throws(Problem) -> Segment {
        // Most segments are plain names: taken whole, not as a token a byte mapped back to bytes.
        if !part.contains(where: { $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "[") }) {
            return .literal(Array(part))
        }
        var tokens: [Token] = []
        var index = part.startIndex
        var hasWildcard = false
        while index < part.endIndex {
            let byte = part[index]
            switch byte {
            case UInt8(ascii: "*"):
                if index + 1 < part.endIndex && part[index + 1] == UInt8(ascii: "*") {
                    throw Problem(message: "'**' must be a whole path segment, as in 'src/**/*.c'", offset: offset + index - part.startIndex)
                }
                tokens.append(.anyRun)
                hasWildcard = true
            case UInt8(ascii: "?"):
                tokens.append(.anyOne)
                hasWildcard = true
            case UInt8(ascii: "\\"):
                index += 1
                guard index < part.endIndex else {
                    throw Problem(message: "the glob ends in a lone '\\'", offset: offset + index - 1 - part.startIndex)
                }
                tokens.append(.byte(part[index]))
            case UInt8(ascii: "["):
                let open = index
                index += 1
                var negated = false
                if index < part.endIndex && (part[index] == UInt8(ascii: "!") || part[index] == UInt8(ascii: "^")) {
                    negated = true
                    index += 1
                }
                var ranges: [ClosedRange<UInt8>] = []
                var first = true
                while index < part.endIndex && (part[index] != UInt8(ascii: "]") || first) {
                    first = false
                    let low = part[index]
                    if index + 2 < part.endIndex && part[index + 1] == UInt8(ascii: "-") && part[index + 2] != UInt8(ascii: "]") {
                        let high = part[index + 2]
                        guard low <= high else {
                            throw Problem(message: "the range '\(Character(Unicode.Scalar(low)))-\(Character(Unicode.Scalar(high)))' is backwards", offset: offset + index - part.startIndex)
                        }
                        ranges.append(low...high)
                        index += 3
                    } else {
                        ranges.append(low...low)
                        index += 1
                    }
                }
                guard index < part.endIndex else {
                    throw Problem(message: "'[' is not closed: add ']' (or write '\\[' for the character)", offset: offset + open - part.startIndex)
                }
                tokens.append(.set(ranges, negated: negated))
                hasWildcard = true
            default:
                tokens.append(.byte(byte))
            }
            index += 1
        }
        guard hasWildcard else {
            return .literal(tokens.map { if case .byte(let byte) = $0 { return byte } else { return 0 } })
        }
        return .wildcard(tokens)
    }

    /// Whether `name` (one path segment) matches a wildcard segment.
    package static func matches(_ tokens: [Token], _ name: UnsafeBufferPointer<UInt8>) -> Bool {
        if name.first == UInt8(ascii: "."), tokens.first != .byte(UInt8(ascii: ".")) { return false }
        // Iterative matching with one backtrack point for the last `*`.
        var t = 0
        var n = 0
        var starToken = -1
        var starName = 0
        while n < name.count {
            if t < tokens.count {
                switch tokens[t] {
                case .anyRun:
                    starToken = t
                    starName = n
                    t += 1
                    continue
                case .anyOne:
                    t += 1
                    n += 1
                    continue
                case .byte(let byte) where byte == name[n]:
                    t += 1
                    n += 1
                    continue
                case .set(let ranges, let negated) where ranges.contains { $0.contains(name[n]) } != negated:
                    t += 1
                    n += 1
                    continue
                default:
                    break
                }
            }
            guard starToken >= 0 else { return false }
            t = starToken + 1
            starName += 1
            n = starName
        }
        while t < tokens.count, tokens[t] == .anyRun { t += 1 }
        return t == tokens.count
    }
}
