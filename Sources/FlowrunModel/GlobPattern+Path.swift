/// A pattern against one path (`flowrun watch` deciding which task a
/// changed file belongs to), and the folders a watch must cover.
extension GlobPattern {
    /// Whether `path` (relative to the pattern's base, or absolute for an
    /// absolute pattern; `/`-separated, no `.` or `..`) is one the pattern matches.
    package func matches(path: String) -> Bool {
        let names = path.split(separator: "/", omittingEmptySubsequences: true).map { Array($0.utf8) }
        return Self.match(segments[...], names[...])
    }

    private static func match(_ segments: ArraySlice<Segment>, _ names: ArraySlice<[UInt8]>) -> Bool {
        guard let segment = segments.first else { return names.isEmpty }
        switch segment {
        case .anyFolders:
            // Last (`site/**`): anything under it, as a watch reads it.
            if segments.count == 1 { return !names.isEmpty && !names.contains { $0.first == UInt8(ascii: ".") } }
            // None, or one more folder (not a hidden one: as GlobExpansion's walk).
            if match(segments.dropFirst(), names) { return true }
            guard let name = names.first, name.first != UInt8(ascii: "."), names.count > 1 else { return false }
            return match(segments, names.dropFirst())
        case .literal(let bytes):
            guard let name = names.first, name == bytes else { return false }
            return match(segments.dropFirst(), names.dropFirst())
        case .wildcard(let tokens):
            guard let name = names.first, name.withUnsafeBufferPointer({ matches(tokens, $0) }) else { return false }
            return match(segments.dropFirst(), names.dropFirst())
        }
    }

    /// The deepest folder every match lies under (its literal leading
    /// segments; "" for the base itself), and whether matches can lie in
    /// folders below it (a wildcard folder or `**`): then every folder under
    /// it must be watched, those made later included.
    package var watchRoot: (folder: String, recursive: Bool) {
        var literal: [String] = []
        for segment in segments.dropLast() {
            guard case .literal(let bytes) = segment else { break }
            literal.append(String(decoding: bytes, as: UTF8.self))
        }
        let folder = (isAbsolute ? "/" : "") + literal.joined(separator: "/")
        return (folder, segments.count - literal.count > 1 || segments.contains(.anyFolders))
    }
}
